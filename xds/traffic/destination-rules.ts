// Which DestinationRule applies to a host, as seen from a proxy's namespace. Istio's order: the
// proxy's own namespace, then the service's namespace, then the root namespace; within a tier the
// rule whose host matches most specifically wins, and among equals the first in the config
// (file path order, then document order) — Istio uses the oldest.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { DestinationRuleResource, Subset } from '../../mesh/types.js';
import { bestMatch, resolveHost } from '../../mesh/hosts.js';
import { visibleTo } from '../../mesh/visibility.js';

/** Mesh-wide rules live here, as in Istio (`istio-system` is Istio's default root namespace). */
export const ROOT_NAMESPACE = 'istio-system';

export function destinationRuleFor(
  config: MeshConfig,
  host: string,
  proxyNamespace: string,
  serviceNamespace?: string,
): DestinationRuleResource | undefined {
  const tiers = [proxyNamespace, serviceNamespace, ROOT_NAMESPACE];
  const byNamespace = rulesByNamespace(config);
  for (const ns of tiers) {
    if (ns === undefined) continue;
    let best: { rule: DestinationRuleResource; specificity: number } | undefined;
    for (const { rule, host: pattern } of byNamespace.get(ns) ?? []) {
      if (!visibleTo(rule.spec.exportTo, rule.namespace, proxyNamespace)) continue;
      const match = bestMatch([pattern], host);
      if (match && (!best || match.specificity > best.specificity))
        best = { rule, specificity: match.specificity };
    }
    if (best) return best.rule;
  }
  return undefined;
}

// Lookups run per cluster, per view, per push; the grouping and resolved hosts are made once per config.
const byNamespaceMemo = new WeakMap<
  MeshConfig,
  Map<string, { rule: DestinationRuleResource; host: string }[]>
>();

function rulesByNamespace(
  config: MeshConfig,
): Map<string, { rule: DestinationRuleResource; host: string }[]> {
  let index = byNamespaceMemo.get(config);
  if (!index) {
    index = new Map();
    for (const rule of config.destinationRules) {
      const list = index.get(rule.namespace) ?? [];
      list.push({ rule, host: resolveHost(rule.spec.host, rule.namespace) });
      index.set(rule.namespace, list);
    }
    byNamespaceMemo.set(config, index);
  }
  return index;
}

export function subsetOf(rule: DestinationRuleResource | undefined, name: string): Subset | undefined {
  return rule?.spec.subsets?.find((s) => s.name === name);
}
