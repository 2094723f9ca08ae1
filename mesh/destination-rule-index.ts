// Which DestinationRule applies to a host, as seen from a proxy's namespace. Istio's order: the
// proxy's own namespace, then the service's namespace, then the root namespace; within a tier the
// rule whose host matches most specifically wins, and among equals the first in the config
// (file path order, then document order) — Istio uses the oldest. Several rules for one host in one
// namespace are first merged into one as Istio merges them (destination-rule-merge.ts). Indexed by
// namespace, then by exact host.
import type { DestinationRuleResource, Subset } from './types.js';
import { mergeDestinationRules, ruleHost } from './destination-rule-merge.js';
import { bestMatch } from './hosts.js';
import { visibleTo } from './visibility.js';

/** Mesh-wide rules live here, as in Istio (`istio-system` is Istio's default root namespace). */
export const ROOT_NAMESPACE = 'istio-system';

interface Rule {
  readonly rule: DestinationRuleResource;
  /** Its host, a short name resolved in its namespace. */
  readonly host: string;
}

/** The rules of one namespace, in config order. */
interface NamespaceEntry {
  readonly exact: Map<string, Rule[]>;
  /** Rules whose host is a wildcard (`*`, `*.suffix`). */
  readonly wildcard: Rule[];
}

export class DestinationRuleIndex {
  private readonly byNamespace = new Map<string, NamespaceEntry>();

  constructor(rules: readonly DestinationRuleResource[]) {
    for (const rule of mergeDestinationRules(rules).rules) {
      let entry = this.byNamespace.get(rule.namespace);
      if (!entry) this.byNamespace.set(rule.namespace, (entry = { exact: new Map(), wildcard: [] }));
      const host = ruleHost(rule);
      if (host.startsWith('*')) entry.wildcard.push({ rule, host });
      else {
        const list = entry.exact.get(host) ?? [];
        list.push({ rule, host });
        entry.exact.set(host, list);
      }
    }
  }

  lookup(
    host: string,
    proxyNamespace: string,
    serviceNamespace?: string,
  ): DestinationRuleResource | undefined {
    for (const ns of [proxyNamespace, serviceNamespace, ROOT_NAMESPACE]) {
      if (ns === undefined) continue;
      const entry = this.byNamespace.get(ns);
      if (!entry) continue;
      const visible = (r: Rule): boolean => visibleTo(r.rule.spec.exportTo, r.rule.namespace, proxyNamespace);
      const exact = entry.exact.get(host)?.find(visible);
      if (exact) return exact.rule;
      let best: { rule: DestinationRuleResource; specificity: number } | undefined;
      for (const r of entry.wildcard) {
        if (!visible(r)) continue;
        const match = bestMatch([r.host], host);
        if (match && (!best || match.specificity > best.specificity))
          best = { rule: r.rule, specificity: match.specificity };
      }
      if (best) return best.rule;
    }
    return undefined;
  }
}

export function subsetOf(rule: DestinationRuleResource | undefined, name: string): Subset | undefined {
  return rule?.spec.subsets?.find((s) => s.name === name);
}
