// Which VirtualService routes a host for a proxy: those bound to the proxy's gateway (`mesh` for
// sidecars and proxyless clients) and visible from its namespace; the most specific host match
// wins, then the first in the config (Istio: the oldest). Indexed by gateway, then by exact host,
// so a lookup reads the few candidates instead of every VirtualService.
import type { VirtualServiceResource } from './types.js';
import { bestMatch, resolveHost } from './hosts.js';
import { visibleTo } from './visibility.js';

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

interface Bound {
  readonly vs: VirtualServiceResource;
  /** Its host patterns that start with `*` (the others match only themselves). */
  readonly wildcards: readonly string[];
}

/** The VirtualServices bound to one gateway, in config order. */
interface GatewayEntry {
  /** host → those naming it exactly: an exact name beats every wildcard. */
  readonly exact: Map<string, Bound[]>;
  /** Those with wildcard hosts. */
  readonly wildcard: Bound[];
}

export class VirtualServiceIndex {
  private readonly byGateway = new Map<string, GatewayEntry>();

  constructor(virtualServices: readonly VirtualServiceResource[]) {
    for (const vs of virtualServices) {
      const hosts = resolvedHosts(vs);
      const bound: Bound = { vs, wildcards: hosts.filter((h) => h.startsWith('*')) };
      for (const gateway of new Set(boundGateways(vs))) {
        let entry = this.byGateway.get(gateway);
        if (!entry) this.byGateway.set(gateway, (entry = { exact: new Map(), wildcard: [] }));
        for (const host of new Set(hosts.filter((h) => !h.startsWith('*')))) {
          const list = entry.exact.get(host) ?? [];
          list.push(bound);
          entry.exact.set(host, list);
        }
        if (bound.wildcards.length > 0) entry.wildcard.push(bound);
      }
    }
  }

  /** The VirtualService that routes `host` for a proxy in `proxyNamespace` on `gateway`. */
  lookup(
    host: string,
    proxyNamespace: string,
    gateway: string = MESH_GATEWAY,
  ): VirtualServiceResource | undefined {
    const entry = this.byGateway.get(gateway);
    if (!entry) return undefined;
    // Gateways see every VirtualService bound to them; exportTo is about the mesh.
    const visible = (b: Bound): boolean =>
      gateway !== MESH_GATEWAY || visibleTo(b.vs.spec.exportTo, b.vs.namespace, proxyNamespace);
    for (const b of entry.exact.get(host) ?? []) if (visible(b)) return b.vs;
    let best: { vs: VirtualServiceResource; specificity: number } | undefined;
    for (const b of entry.wildcard) {
      if (!visible(b)) continue;
      const match = bestMatch(b.wildcards, host);
      if (match && (!best || match.specificity > best.specificity))
        best = { vs: b.vs, specificity: match.specificity };
    }
    return best?.vs;
  }
}
