// What a VirtualService's routes are rendered against: which kind of client (its capabilities), the
// proxy (namespace, labels) and the port and gateway the traffic arrives on.
import type { Catalog } from '../../model/catalog.js';
import type { MeshIndex } from '../../mesh/mesh-index.js';
import type { Proxy } from '../proxy/proxy.js';

/** Envoy renders all of a route; proxyless gRPC only what gRFCs A28/A31/A33/A42/A44 define. */
export type RouteClient = 'envoy' | 'grpc';

export interface RouteContext {
  readonly client: RouteClient;
  /** The mesh config's lookups: which VirtualService and DestinationRule apply. */
  readonly index: MeshIndex;
  readonly catalog: Catalog;
  /** Namespace of the proxy: DestinationRule lookup and `sourceNamespace` matches. */
  readonly proxyNamespace: string;
  /** The proxy's own labels, for `sourceLabels` matches. */
  readonly proxyLabels: Readonly<Record<string, string>>;
  /** `mesh` for sidecars and proxyless clients, `namespace/name` for a gateway. */
  readonly gateway: string;
  /** The port the traffic was sent to (the service port, or the gateway server's port). */
  readonly port: number;
}

/**
 * The labels a proxy declares: Envoy's parsed LABELS, or a gRPC client's `LABELS` node metadata
 * (Istio's key) when it is a map of strings; anything else counts as no labels.
 */
export function proxyLabels(proxy: Proxy): Readonly<Record<string, string>> {
  if (proxy.envoy) return proxy.envoy.labels;
  const raw = proxy.metadata.LABELS;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) if (typeof v === 'string') out[k] = v;
  return out;
}

/** What routes depend on besides the catalog and config: proxies with equal keys share them. */
export function routeViewKey(proxy: Proxy): string {
  return JSON.stringify([proxy.namespace, proxyLabels(proxy)]);
}

/** The route context of a proxy for traffic on `port` (as a sidecar or proxyless client unless `gateway`). */
export function routeContext(
  gen: { readonly proxy: Proxy; readonly catalog: Catalog; readonly index: MeshIndex },
  client: RouteClient,
  port: number,
  gateway = 'mesh',
): RouteContext {
  return {
    client,
    index: gen.index,
    catalog: gen.catalog,
    proxyNamespace: gen.proxy.namespace,
    proxyLabels: proxyLabels(gen.proxy),
    gateway,
    port,
  };
}

// The predicate is the mesh model's (a config edit's change keys depend on it): re-exported here
// for the generators that import it from this file.
export { configHasFaults } from '../../mesh/faults.js';
