// What Envoy's resources depend on besides the catalog, as a cache key; and the listener set of a
// view computed once per catalog (LDS asks for it by name many times per push).
import type { Listener } from '../../generated/envoy/config/listener/v3/Listener.js';
import type { EnvoyNode } from '../../envoy-node.js';
import type { GenerateContext } from '../../generator.js';
import type { Proxy } from '../../proxy.js';
import { gatewayListeners } from './gateway.js';
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
};

export function envoyNode(proxy: Proxy): EnvoyNode {
  return proxy.envoy ?? NO_NODE;
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
    const node = envoyNode(proxy);
    listeners = node.role === 'router' ? gatewayListeners(ctx) : sidecarListeners(ctx, node);
    byView.set(key, listeners);
  }
  return listeners;
}
