// Envoy gateways (`router` nodes): listeners from the Gateway resources whose selector matches the
// node's LABELS, and routes from the VirtualServices bound to those gateways. Covered: servers by port
// (HTTP, HTTPS/TLS terminated from cert files, TCP by the bound VirtualService's tcp routes, TLS
// passthrough to the first tls route). An HTTP server is plain HTTP whatever its `tls` says, as in
// Istio: `tls.httpsRedirect` makes its virtual hosts `require_tls: ALL` (Envoy answers 301 to https).
// hosts, and per VirtualService host its http routes, rendered by the shared translator
// (xds/traffic/http-routes.ts) for this gateway (`namespace/name`) and port. The AuthorizationPolicies
// and RequestAuthentications selecting the gateway (its namespace and LABELS) go on every chain.
import type { FilterChain } from '../../generated/envoy/config/listener/v3/FilterChain.js';
import type { Listener } from '../../generated/envoy/config/listener/v3/Listener.js';
import type { RouteConfiguration } from '../../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { VirtualHost } from '../../generated/envoy/config/route/v3/VirtualHost.js';
import type { DownstreamTlsContext } from '../../generated/envoy/extensions/transport_sockets/tls/v3/DownstreamTlsContext.js';
import type { Catalog } from '../../../model/catalog.js';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type {
  GatewayResource,
  GatewayServer,
  RouteDestination,
  ServerTLSSettings,
  VirtualServiceResource,
} from '../../../mesh/types.js';
import { clusterName, gatewayRouteName, socketListenerName } from '../names.js';
import { toAny } from '../../proto/resource.js';
import type { GenerateContext } from '../generator.js';
import { hostMatches } from '../../../mesh/hosts.js';
import { virtualServiceRoutes } from '../../traffic/http-routes.js';
import { routeContext } from '../../traffic/route-context.js';
import { tcpRouteTarget, tcpTargetName } from '../../traffic/tcp-routes.js';
import { NO_AUTHZ, type InboundAuthz } from './authz-filters.js';
import {
  DOWNSTREAM_TLS_TYPE,
  httpConnectionManager,
  meshHcmOptions,
  socketAddress,
  tcpProxy,
  tlsInspectorFilter,
} from './filters.js';

/** What gateway generation reads of the mesh config. */
export type GatewayConfig = Pick<MeshConfig, 'gateways' | 'virtualServices'>;

const HTTP_PROTOCOLS = new Set(['HTTP', 'HTTP2', 'GRPC', 'HTTPS']);
/** Servers of these protocols never terminate TLS (Istio's `IsHTTP()`); their `tls` only redirects. */
const PLAIN_HTTP_PROTOCOLS = new Set(['HTTP', 'HTTP2', 'GRPC', 'GRPC-WEB']);

function selected(config: GatewayConfig, labels: Readonly<Record<string, string>>): GatewayResource[] {
  return config.gateways.filter((g) =>
    Object.entries(g.spec.selector ?? {}).every(([k, v]) => labels[k] === v),
  );
}

function plainHttp(server: GatewayServer): boolean {
  return PLAIN_HTTP_PROTOCOLS.has(server.port.protocol.toUpperCase());
}

/** HTTPS and TLS servers terminate TLS unless the mode is PASSTHROUGH; plain HTTP servers never do. */
function terminates(server: GatewayServer): boolean {
  return (
    !plainHttp(server) &&
    server.tls !== undefined &&
    server.tls.mode !== 'PASSTHROUGH' &&
    server.tls.mode !== 'AUTO_PASSTHROUGH'
  );
}

/** Whether plain-HTTP requests to this server's hosts are redirected to https (`tls.httpsRedirect`). */
function redirectsToHttps(server: GatewayServer): boolean {
  return server.tls?.httpsRedirect === true;
}

function isHttpServer(server: GatewayServer): boolean {
  const p = server.port.protocol.toUpperCase();
  return HTTP_PROTOCOLS.has(p) && (p !== 'HTTPS' || terminates(server));
}

/** The gateway's listeners; `authz` (the policies selecting the gateway's workload) goes on every chain. */
export function gatewayListeners(
  ctx: GenerateContext,
  authz: InboundAuthz = NO_AUTHZ,
): Map<string, Listener> {
  const { config } = ctx;
  const labels = ctx.proxy.envoy?.labels ?? {};
  const byPort = new Map<number, { gateway: GatewayResource; server: GatewayServer }[]>();
  for (const gateway of selected(config, labels))
    for (const server of gateway.spec.servers) {
      const list = byPort.get(server.port.number) ?? [];
      list.push({ gateway, server });
      byPort.set(server.port.number, list);
    }
  const out = new Map<string, Listener>();
  for (const [port, servers] of [...byPort.entries()].sort((a, b) => a[0] - b[0])) {
    const chains: FilterChain[] = [];
    const seenSni = new Set<string>();
    for (const { gateway, server } of servers) {
      const chain = serverChain(ctx, gateway, server, port, authz);
      if (!chain) continue;
      // Envoy refuses two chains with the same match: the first server for a set of names wins.
      const sniKey = JSON.stringify(chain.filter_chain_match?.server_names ?? []);
      if (seenSni.has(sniKey)) continue;
      seenSni.add(sniKey);
      chains.push(chain);
    }
    if (chains.length === 0) continue;
    const name = socketListenerName('0.0.0.0', port);
    const needsSni = chains.some((c) => (c.filter_chain_match?.server_names?.length ?? 0) > 0);
    out.set(name, {
      name,
      address: socketAddress('0.0.0.0', port),
      traffic_direction: 'OUTBOUND',
      ...(needsSni && { listener_filters: [tlsInspectorFilter()] }),
      filter_chains: chains,
    });
  }
  return out;
}

function serverChain(
  ctx: GenerateContext,
  gateway: GatewayResource,
  server: GatewayServer,
  port: number,
  authz: InboundAuthz,
): FilterChain | undefined {
  const { config, catalog } = ctx;
  const sni =
    server.tls && !plainHttp(server) ? server.hosts.filter((h) => h !== '*' && !h.includes('/')) : [];
  const match = sni.length > 0 ? { filter_chain_match: { server_names: sni } } : {};
  if (isHttpServer(server)) {
    const route = gatewayRouteName(port);
    return {
      ...match,
      filters: [
        httpConnectionManager(
          route,
          { rds: route },
          { fault: true, filters: authz.httpFilters(), ...meshHcmOptions(config) },
        ),
      ],
      ...(terminates(server) && { transport_socket: tlsSocket(server.tls ?? {}) }),
    };
  }
  // TCP: the first bound VirtualService with a tcp route for this port, split by weight as it says.
  if (!server.tls) {
    const routing = routeContext(ctx, 'envoy', port, `${gateway.namespace}/${gateway.name}`);
    for (const vs of boundServices(config, gateway, server.hosts)) {
      const target = tcpRouteTarget(vs, routing);
      if (target)
        return { ...match, filters: [...authz.networkFilters(), tcpProxy(tcpTargetName(target), target)] };
    }
  }
  // TLS passed through (or TCP with only tls routes): the first destination of the first route.
  const dest = boundServices(config, gateway, server.hosts)
    .flatMap((vs) => [...(vs.spec.tls ?? []), ...(vs.spec.tcp ?? [])])
    .flatMap((r) => r.route)[0];
  const cluster = dest && destinationCluster(catalog, dest);
  if (!cluster) return undefined;
  return { ...match, filters: [...authz.networkFilters(), tcpProxy(cluster, cluster)] };
}

function tlsSocket(tls: ServerTLSSettings): {
  name: string;
  typed_config: { type_url: string; value: Buffer };
} {
  const context: DownstreamTlsContext = {
    common_tls_context: {
      tls_certificates: [
        {
          certificate_chain: { filename: tls.serverCertificate ?? '' },
          private_key: { filename: tls.privateKey ?? '' },
        },
      ],
      ...(tls.mode === 'MUTUAL' &&
        tls.caCertificates && { validation_context: { trusted_ca: { filename: tls.caCertificates } } }),
    },
    ...(tls.mode === 'MUTUAL' && { require_client_certificate: { value: true } }),
  };
  return { name: 'envoy.transport_sockets.tls', typed_config: toAny(DOWNSTREAM_TLS_TYPE, context) };
}

/** VirtualServices naming this gateway (`name` in its own namespace, or `namespace/name`) whose hosts meet the server's. */
function boundServices(
  config: GatewayConfig,
  gateway: GatewayResource,
  serverHosts: readonly string[],
): VirtualServiceResource[] {
  return config.virtualServices.filter(
    (vs) =>
      (vs.spec.gateways ?? []).some(
        (g) =>
          g === `${gateway.namespace}/${gateway.name}` ||
          (g === gateway.name && vs.namespace === gateway.namespace),
      ) && vs.spec.hosts.some((h) => serverHosts.some((sh) => hostMatches(sh.replace(/^[^/]*\//, ''), h))),
  );
}

/** The `http.PORT` route configuration of a gateway node; undefined when no HTTP server uses that port. */
export function gatewayRoute(ctx: GenerateContext, port: number): RouteConfiguration | undefined {
  const { config } = ctx;
  const labels = ctx.proxy.envoy?.labels ?? {};
  const servers = selected(config, labels).flatMap((gateway) =>
    gateway.spec.servers
      .filter((s) => s.port.number === port && isHttpServer(s))
      .map((server) => ({ gateway, server })),
  );
  if (servers.length === 0) return undefined;
  const hosts = new Map<string, VirtualHost>();
  for (const { gateway, server } of servers) {
    for (const vs of boundServices(config, gateway, server.hosts)) {
      for (const host of vs.spec.hosts) {
        if (hosts.has(host) || !server.hosts.some((sh) => hostMatches(sh.replace(/^[^/]*\//, ''), host)))
          continue;
        const routing = routeContext(ctx, 'envoy', port, `${gateway.namespace}/${gateway.name}`);
        const routes = virtualServiceRoutes(vs, routing);
        if (routes.length > 0)
          hosts.set(host, {
            name: `${host}:${port}`,
            domains: [host, `${host}:${port}`],
            routes,
            ...(redirectsToHttps(server) && { require_tls: 'ALL' as const }),
          });
      }
    }
  }
  // Istio: every host of a redirecting server redirects, whether or not a VirtualService routes it.
  for (const { server } of servers) {
    if (!redirectsToHttps(server)) continue;
    for (const host of server.hosts.map((h) => h.replace(/^[^/]*\//, '').toLowerCase())) {
      const existing = hosts.get(host);
      if (existing) hosts.set(host, { ...existing, require_tls: 'ALL' });
      else
        hosts.set(host, {
          name: `${host}:${port}`,
          domains: hostDomains(host, port),
          routes: [],
          require_tls: 'ALL',
        });
    }
  }
  return { name: gatewayRouteName(port), virtual_hosts: [...hosts.values()] };
}

/** A redirecting host's domains: with and without the port (`*` alone stands for every host). */
function hostDomains(host: string, port: number): string[] {
  return host === '*' ? ['*'] : [host, `${host}:${port}`];
}

/** `outbound|PORT||HOST` of a destination, when that service (and port) exists. */
function destinationCluster(catalog: Catalog, d: RouteDestination): string | undefined {
  const service = catalog.service(d.destination.host);
  if (!service) return undefined;
  const port = d.destination.port
    ? service.ports.find((p) => p.number === d.destination.port?.number)
    : service.ports.length === 1
      ? service.ports[0]
      : undefined;
  return port && clusterName('outbound', port.number, '', service.hostname);
}
