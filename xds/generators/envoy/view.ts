// What Envoy's resources depend on besides the catalog, as a cache key; and the listener set of a
// view computed once per catalog (LDS asks for it by name many times per push).
import type { Listener } from '../../generated/envoy/config/listener/v3/Listener.js';
import type { Catalog } from '../../../model/catalog.js';
import type { EnvoyNode } from '../../envoy-node.js';
import type { Proxy } from '../../proxy.js';
import { DEFAULT_CERT_DIR } from '../../workload-certs.js';
import { gatewayListeners, type GatewaySource } from './gateway.js';
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

/** Everything about the proxy its listeners depend on: proxies with equal keys share them. */
export function listenerViewKey(proxy: Proxy): string {
  const node = envoyNode(proxy);
  return JSON.stringify([proxy.ips, proxy.namespace, node]);
}

const listenerMemo = new WeakMap<Catalog, Map<string, Map<string, Listener>>>();

export function listenersFor(catalog: Catalog, proxy: Proxy, gateways: GatewaySource): Map<string, Listener> {
  const key = `${gateways.generation()}\0${listenerViewKey(proxy)}`;
  let byView = listenerMemo.get(catalog);
  if (!byView) listenerMemo.set(catalog, (byView = new Map<string, Map<string, Listener>>()));
  let listeners = byView.get(key);
  if (!listeners) {
    const node = envoyNode(proxy);
    listeners =
      node.role === 'router'
        ? gatewayListeners(gateways.snapshot(), catalog, node.labels)
        : sidecarListeners(catalog, proxy.ips, node);
    byView.set(key, listeners);
  }
  return listeners;
}
