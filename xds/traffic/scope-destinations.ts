// A Sidecar scope widened by the VirtualServices it lets a proxy route through: every host a route
// of those VirtualServices sends (or mirrors) traffic to gets its clusters, as Istio's SidecarScope
// adds "destinations inferred from virtual services". Without it a route could name a cluster the
// proxy is never sent, and Envoy would answer 503 (no cluster) for traffic the config allows.
import type { Catalog } from '../../model/catalog.js';
import type { MeshIndex } from '../../mesh/mesh-index.js';
import type { Destination, VirtualServiceResource } from '../../mesh/types.js';
import { resolveHost } from '../../mesh/hosts.js';
import { UNSCOPED, type ProxyScope } from '../../mesh/sidecar-scope.js';

/**
 * `scope` with its clusters widened to the destinations of the mesh VirtualServices that route the
 * services it admits, as seen from `namespace` (the same lookup the routes are rendered with).
 * Reads the whole catalog: callers keep the result per serving view (xds/generators/envoy/view.ts).
 */
export function withRouteDestinations(
  scope: ProxyScope,
  index: MeshIndex,
  catalog: Catalog,
  namespace: string,
): ProxyScope {
  if (scope === UNSCOPED || index.config.virtualServices.length === 0) return scope;
  const extra = new Set<string>();
  const seen = new Set<VirtualServiceResource>();
  for (const s of catalog.services()) {
    if (!scope.clusters(s)) continue;
    const vs = index.virtualServices.lookup(s.hostname, namespace);
    if (!vs || seen.has(vs)) continue;
    seen.add(vs);
    for (const d of routeDestinations(vs)) extra.add(resolveHost(d.host, vs.namespace));
  }
  if (extra.size === 0) return scope;
  return {
    clusters: (service) => scope.clusters(service) || extra.has(service.hostname),
    listeners: scope.listeners,
  };
}

/** Every destination a VirtualService's http and tcp routes send or mirror to. */
export function routeDestinations(vs: VirtualServiceResource): Destination[] {
  return [
    ...(vs.spec.http ?? []).flatMap((r) => [
      ...(r.route ?? []).map((d) => d.destination),
      ...(r.mirror ? [r.mirror] : []),
      ...(r.mirrors ?? []).map((m) => m.destination),
    ]),
    ...(vs.spec.tcp ?? []).flatMap((r) => r.route.map((d) => d.destination)),
  ];
}
