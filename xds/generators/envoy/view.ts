// What Envoy's resources depend on besides the catalog, as a cache key; and the listener set of a
// view computed once per serving view (LDS asks for it by name many times per push).
import type { Listener } from '../../generated/envoy/config/listener/v3/Listener.js';
import type { EnvoyNode } from '../../proxy/envoy-node.js';
import type { GenerateContext } from '../generator.js';
import { memoSlot } from '../view-memo.js';
import type { Proxy } from '../../proxy/proxy.js';
import { withRouteDestinations } from '../../traffic/scope-destinations.js';
import { UNSCOPED, type ProxyScope } from '../../../mesh/sidecar-scope.js';
import { DEFAULT_CERT_DIR } from '../../../mesh/workload-certs.js';
import { gatewayListeners } from './gateway.js';
import { inboundSecurity, type InboundSecurity } from './inbound-tls.js';
import { inboundAuthz, type InboundAuthz } from './authz-filters.js';
import { sidecarListeners } from './sidecar-listeners.js';

const NO_NODE: EnvoyNode = {
  role: 'sidecar',
  labels: {},
  serviceAccount: '',
  interceptionMode: 'NONE',
  outboundModes: ['explicit'],
  outboundPolicy: 'ALLOW_ANY',
  upstreams: [],
  httpProxyPort: 15080,
  appPorts: {},
  certDir: DEFAULT_CERT_DIR,
  sdsCluster: '',
  dnsAutoAllocate: false,
};

export function envoyNode(proxy: Proxy): EnvoyNode {
  return proxy.envoy ?? NO_NODE;
}

/**
 * The services a sidecar is sent, per the Sidecar resource that selects it (gateways are not
 * scoped, as in Istio), its clusters widened to where the VirtualServices of those services route,
 * so that every route names a cluster the proxy has. Depends on the proxy's namespace and labels:
 * see `scopeViewKey`.
 */
export function proxyScope(ctx: GenerateContext): ProxyScope {
  const node = envoyNode(ctx.proxy);
  if (node.role !== 'sidecar') return UNSCOPED;
  // Asked once per cluster, listener and route built; the widening reads the whole catalog.
  return ctx.memo.get(WIDENED_SCOPES, scopeViewKey(ctx.proxy), ctx, (ctx) => {
    const scope = ctx.index.sidecars.scope(ctx.proxy.namespace, node.labels);
    return withRouteDestinations(scope, ctx.index, ctx.catalog, ctx.proxy.namespace);
  });
}

const WIDENED_SCOPES = memoSlot<ProxyScope>('envoy sidecar scopes');

/** The node as the config has it: a selecting Sidecar's outboundTrafficPolicy overrides the metadata's. */
export function effectiveNode(ctx: GenerateContext): EnvoyNode {
  const node = envoyNode(ctx.proxy);
  if (node.role !== 'sidecar') return node;
  const mode = ctx.index.sidecars.outboundPolicy(ctx.proxy.namespace, node.labels);
  return mode && mode !== node.outboundPolicy ? { ...node, outboundPolicy: mode } : node;
}

/** What Sidecar selection reads of a proxy: its namespace and labels. */
export function scopeViewKey(proxy: Proxy): string {
  return JSON.stringify([proxy.namespace, envoyNode(proxy).labels]);
}

/** Everything about the proxy its listeners depend on: proxies with equal keys share them. */
export function listenerViewKey(proxy: Proxy): string {
  const node = envoyNode(proxy);
  return JSON.stringify([proxy.ips, proxy.namespace, node]);
}

const LISTENERS = memoSlot<Map<string, Listener>>('envoy listeners');

/** The listeners of the proxy's view, by name: built once per serving view and listener view key. */
export function listenersFor(ctx: GenerateContext): Map<string, Listener> {
  return ctx.memo.get(LISTENERS, listenerViewKey(ctx.proxy), ctx, (ctx) => {
    const node = effectiveNode(ctx);
    return node.role === 'router'
      ? gatewayListeners(ctx, inboundAuthzFor(ctx))
      : sidecarListeners(ctx, node, proxyScope(ctx).listeners, {
          security: inboundSecurityFor(ctx),
          authz: inboundAuthzFor(ctx),
        });
  });
}

/** AuthorizationPolicy and RequestAuthentication for this proxy's workload (its namespace and LABELS). */
export function inboundAuthzFor(ctx: GenerateContext): InboundAuthz {
  return inboundAuthz(ctx.index, { namespace: ctx.proxy.namespace, labels: envoyNode(ctx.proxy).labels });
}

/** PeerAuthentication for this proxy's workload (its namespace and LABELS). */
function inboundSecurityFor(ctx: GenerateContext): InboundSecurity {
  const node = envoyNode(ctx.proxy);
  return inboundSecurity({
    config: ctx.config,
    workload: { namespace: ctx.proxy.namespace, labels: node.labels },
    secrets: node,
    ...(ctx.trustDomain && { trustDomain: ctx.trustDomain }),
  });
}
