// What Envoy's resources depend on besides the catalog, as a cache key; and the listener set of a
// view computed once per catalog (LDS asks for it by name many times per push).
import type { Listener } from '../../generated/envoy/config/listener/v3/Listener.js';
import type { EnvoyNode } from '../../proxy/envoy-node.js';
import type { GenerateContext } from '../generator.js';
import type { Proxy } from '../../proxy/proxy.js';
import { withRouteDestinations } from '../../traffic/scope-destinations.js';
import { scopeFor, sidecarOutboundPolicy, UNSCOPED, type ProxyScope } from '../../traffic/sidecar-scope.js';
import { DEFAULT_CERT_DIR } from '../../../mesh/workload-certs.js';
import { gatewayListeners } from './gateway.js';
import { inboundSecurity, type InboundSecurity } from './inbound-tls.js';
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
  const scope = scopeFor(ctx.config, ctx.proxy.namespace, node.labels);
  return withRouteDestinations(scope, ctx.config, ctx.catalog, ctx.proxy.namespace);
}

/** The node as the config has it: a selecting Sidecar's outboundTrafficPolicy overrides the metadata's. */
export function effectiveNode(ctx: GenerateContext): EnvoyNode {
  const node = envoyNode(ctx.proxy);
  if (node.role !== 'sidecar') return node;
  const mode = sidecarOutboundPolicy(ctx.config, ctx.proxy.namespace, node.labels);
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

// Keyed by catalog, then config generation and view: a new catalog drops everything built for the old.
const listenerMemo = new WeakMap<object, Map<string, Map<string, Listener>>>();

export function listenersFor(ctx: GenerateContext): Map<string, Listener> {
  const { catalog, proxy, config } = ctx;
  const key = `${config.generation}\0${listenerViewKey(proxy)}`;
  let byView = listenerMemo.get(catalog);
  if (!byView) listenerMemo.set(catalog, (byView = new Map<string, Map<string, Listener>>()));
  let listeners = byView.get(key);
  if (!listeners) {
    const node = effectiveNode(ctx);
    listeners =
      node.role === 'router'
        ? gatewayListeners(ctx)
        : sidecarListeners(ctx, node, proxyScope(ctx).listeners, inboundSecurityFor(ctx));
    byView.set(key, listeners);
  }
  return listeners;
}

/** PeerAuthentication for this proxy's workload (its namespace and LABELS). */
function inboundSecurityFor(ctx: GenerateContext): InboundSecurity {
  const node = envoyNode(ctx.proxy);
  return inboundSecurity({
    config: ctx.config,
    workload: { namespace: ctx.proxy.namespace, labels: node.labels },
    certDir: node.certDir,
    ...(ctx.trustDomain && { trustDomain: ctx.trustDomain }),
  });
}
