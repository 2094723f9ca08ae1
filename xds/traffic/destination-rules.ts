// Which DestinationRule applies to a host, as seen from a proxy's namespace. Istio's order: the
// proxy's own namespace, then the service's namespace, then the root namespace; within a tier the
// rule whose host matches most specifically wins, and among equals the first in the config
// (file path order, then document order) — Istio uses the oldest.
import type { MeshConfig } from '../../config-dir/mesh-config.js';
import type { DestinationRuleResource, Subset } from '../../config-dir/types.js';
import { bestMatch, resolveHost } from './hosts.js';
import { visibleTo } from './visibility.js';

/** Mesh-wide rules live here, as in Istio (`istio-system` is Istio's default root namespace). */
export const ROOT_NAMESPACE = 'istio-system';

export function destinationRuleFor(
  config: MeshConfig,
  host: string,
  proxyNamespace: string,
  serviceNamespace?: string,
): DestinationRuleResource | undefined {
  const tiers = [proxyNamespace, serviceNamespace, ROOT_NAMESPACE];
  for (const ns of tiers) {
    if (ns === undefined) continue;
    let best: { rule: DestinationRuleResource; specificity: number } | undefined;
    for (const rule of config.destinationRules) {
      if (rule.namespace !== ns || !visibleTo(rule.spec.exportTo, rule.namespace, proxyNamespace)) continue;
      const match = bestMatch([resolveHost(rule.spec.host, rule.namespace)], host);
      if (match && (!best || match.specificity > best.specificity))
        best = { rule, specificity: match.specificity };
    }
    if (best) return best.rule;
  }
  return undefined;
}

export function subsetOf(rule: DestinationRuleResource | undefined, name: string): Subset | undefined {
  return rule?.spec.subsets?.find((s) => s.name === name);
}
