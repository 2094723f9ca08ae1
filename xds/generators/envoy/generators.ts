// The four generators for Envoy proxies (sidecars and gateways). LDS and CDS are wildcard; RDS and
// EDS answer the names the listeners and clusters reference, so a consistent set is always served.
import type { GenerateContext, ResourceGenerator } from '../generator.js';
import {
  BLACKHOLE_CLUSTER,
  clusterHost,
  HTTP_PROXY_ROUTE,
  INBOUND_PASSTHROUGH_CLUSTER,
  inboundClusterName,
  parseClusterName,
  parseInboundClusterName,
  PASSTHROUGH_CLUSTER,
} from '../names.js';
import type { Proxy } from '../../proxy/proxy.js';
import { encodeResource } from '../../proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../proto/type-urls.js';
import { buildLoadAssignment, loadAssignmentViewKey, loadAssignmentViewKeyReads } from '../endpoints.js';
import {
  blackHoleCluster,
  inboundCluster,
  inboundPassthroughCluster,
  outboundCluster,
  outboundClusterNames,
  passthroughCluster,
} from './clusters.js';
import { gatewayRoute } from './gateway.js';
import { jwksCluster, jwksClusterNames } from './jwks-clusters.js';
import { inboundPorts } from './sidecar-listeners.js';
import { httpProxyRoute, portRoute } from './sidecar-routes.js';
import { withUpstreamTls } from './upstream-tls.js';
import { effectiveNode, envoyNode, listenersFor, listenerViewKey, proxyScope, scopeViewKey } from './view.js';
import { routeViewKey } from '../../traffic/route-context.js';

export function envoyGenerators(): ResourceGenerator[] {
  return [clusters(), endpoints(), listeners(), routes()];
}

function clusters(): ResourceGenerator {
  return {
    typeUrl: CLUSTER,
    proxyKind: 'envoy',
    hostOf: clusterHost,
    // Outbound clusters depend on the DestinationRules and Sidecar the proxy sees (by namespace
    // and labels; gateways are not scoped) and, for TLS, on the certificate directory; inbound ones
    // on where the app listens, and which ports they are on the sidecar's IPs; JWKS clusters on the
    // RequestAuthentications selecting the workload (namespace and labels again).
    viewKey: (proxy) =>
      `${envoyNode(proxy).role} ${scopeViewKey(proxy)} ${JSON.stringify([envoyNode(proxy).appPorts, envoyNode(proxy).certDir, envoyNode(proxy).sdsCluster, isSidecar(proxy) ? [...proxy.ips].sort() : []])}`,
    wildcardNames: (ctx) => [
      ...outboundClusterNames(ctx.catalog, ctx.index, ctx.proxy.namespace, proxyScope(ctx).clusters),
      PASSTHROUGH_CLUSTER,
      BLACKHOLE_CLUSTER,
      ...jwksClusterNames(ctx),
      ...(isSidecar(ctx.proxy)
        ? [
            INBOUND_PASSTHROUGH_CLUSTER,
            ...inboundPorts(ctx.catalog, ctx.proxy.ips).map((p) => inboundClusterName(p.port)),
          ]
        : []),
    ],
    build(ctx, name) {
      const cluster = buildCluster(ctx, name);
      return cluster && encodeResource(CLUSTER, name, cluster);
    },
  };
}

function buildCluster(ctx: GenerateContext, name: string): ReturnType<typeof passthroughCluster> | undefined {
  if (name === PASSTHROUGH_CLUSTER) return passthroughCluster();
  if (name === BLACKHOLE_CLUSTER) return blackHoleCluster();
  if (name === INBOUND_PASSTHROUGH_CLUSTER) return inboundPassthroughCluster();
  if (name.startsWith('jwks|')) return jwksCluster(ctx, name);
  const inboundPort = parseInboundClusterName(name);
  if (inboundPort !== undefined)
    return inboundCluster(inboundPort, envoyNode(ctx.proxy).appPorts[inboundPort] ?? inboundPort);
  const key = parseClusterName(name);
  if (!key || key.direction !== 'outbound') return undefined;
  const service = ctx.catalog.service(key.hostname);
  if (!service || !proxyScope(ctx).clusters(service)) return undefined;
  const cluster = outboundCluster(ctx.catalog, service, key.port, {
    index: ctx.index,
    proxyNamespace: ctx.proxy.namespace,
    subset: key.subset,
  });
  return cluster && withUpstreamTls(ctx, service, key.port, cluster, key.subset);
}

function endpoints(): ResourceGenerator {
  return {
    typeUrl: ENDPOINT,
    proxyKind: 'envoy',
    hostOf: clusterHost,
    viewKey: loadAssignmentViewKey,
    viewKeyReads: loadAssignmentViewKeyReads,
    wildcardNames: () => [],
    build: (ctx, name) => buildLoadAssignment(ctx, name),
  };
}

function listeners(): ResourceGenerator {
  return {
    typeUrl: LISTENER,
    proxyKind: 'envoy',
    viewKey: listenerViewKey,
    wildcardNames: (ctx) => [...listenersFor(ctx).keys()],
    build(ctx, name) {
      const listener = listenersFor(ctx).get(name);
      return listener && encodeResource(LISTENER, name, listener);
    },
  };
}

function routes(): ResourceGenerator {
  return {
    typeUrl: ROUTE,
    proxyKind: 'envoy',
    // Routes depend on the role, the outbound policy (metadata or Sidecar), and the namespace and
    // labels: VirtualService selection, sourceLabels matches and the Sidecar scope.
    viewKey: (proxy) => `${envoyNode(proxy).role} ${envoyNode(proxy).outboundPolicy} ${routeViewKey(proxy)}`,
    wildcardNames: () => [],
    build(ctx, name) {
      const config = routeConfig(ctx, name);
      return config && encodeResource(ROUTE, name, config);
    },
  };
}

function routeConfig(ctx: GenerateContext, name: string) {
  const node = effectiveNode(ctx);
  if (node.role === 'router') {
    const m = /^http\.(\d{1,5})$/.exec(name);
    return m ? gatewayRoute(ctx, Number(m[1])) : undefined;
  }
  const scope = proxyScope(ctx).listeners;
  if (name === HTTP_PROXY_ROUTE) return httpProxyRoute(ctx, scope);
  return /^\d{1,5}$/.test(name) ? portRoute(ctx, Number(name), node.outboundPolicy, scope) : undefined;
}

function isSidecar(proxy: Proxy): boolean {
  return envoyNode(proxy).role === 'sidecar';
}
