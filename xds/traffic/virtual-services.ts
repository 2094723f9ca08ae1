// Which VirtualService routes a host for a proxy: those bound to the proxy's gateway (`mesh` for
// sidecars and proxyless clients) and visible from its namespace; the most specific host match
// wins, then the first in the config (Istio: the oldest).
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { VirtualServiceResource } from '../../mesh/types.js';
import { bestMatch, resolveHost } from '../../mesh/hosts.js';
import { visibleTo } from '../../mesh/visibility.js';

export const MESH_GATEWAY = 'mesh';

/** The VirtualService's gateways as `mesh` or `namespace/name`; absent means `mesh`. */
export function boundGateways(vs: VirtualServiceResource): string[] {
  const gateways = vs.spec.gateways && vs.spec.gateways.length > 0 ? vs.spec.gateways : [MESH_GATEWAY];
  return gateways.map((g) => (g === MESH_GATEWAY || g.includes('/') ? g : `${vs.namespace}/${g}`));
}

/** The hosts of a VirtualService, short names resolved in its namespace. */
export function resolvedHosts(vs: VirtualServiceResource): string[] {
  return vs.spec.hosts.map((h) => resolveHost(h, vs.namespace));
}

export function virtualServiceFor(
  config: MeshConfig,
  host: string,
  proxyNamespace: string,
  gateway: string = MESH_GATEWAY,
): VirtualServiceResource | undefined {
  let best: { vs: VirtualServiceResource; specificity: number } | undefined;
  for (const { vs, hosts, gateways } of bound(config)) {
    if (!gateways.includes(gateway)) continue;
    if (gateway === MESH_GATEWAY && !visibleTo(vs.spec.exportTo, vs.namespace, proxyNamespace)) continue;
    const match = bestMatch(hosts, host);
    if (match && (!best || match.specificity > best.specificity))
      best = { vs, specificity: match.specificity };
  }
  return best?.vs;
}

interface BoundVirtualService {
  readonly vs: VirtualServiceResource;
  readonly hosts: readonly string[];
  readonly gateways: readonly string[];
}

// Lookups run per host, per view, per push; the resolved hosts and gateways are computed once per config.
const boundMemo = new WeakMap<MeshConfig, readonly BoundVirtualService[]>();

function bound(config: MeshConfig): readonly BoundVirtualService[] {
  let list = boundMemo.get(config);
  if (!list) {
    list = config.virtualServices.map((vs) => ({
      vs,
      hosts: resolvedHosts(vs),
      gateways: boundGateways(vs),
    }));
    boundMemo.set(config, list);
  }
  return list;
}
