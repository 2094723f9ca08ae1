// Which DestinationRule applies to a host, as seen from a proxy's namespace. Istio's order: the
// proxy's own namespace, then the service's namespace, then the root namespace; within a tier the
// rule whose host matches most specifically wins, and among equals the first in the config
// (file path order, then document order) — Istio uses the oldest. Several rules for one host in one
// namespace are first merged into one as Istio merges them (destination-rule-merge.ts). Indexed by
// namespace, then by exact host: one bucket per (namespace, host), its rules and their merge.
//
// A config step that changed a few rules derives the next list's index from the previous one's
// (noteDestinationRuleStep, from mesh/config-change.ts): only the buckets of the touched rules are
// merged again, and a group whose rules did not change keeps its merged rule object, so what is
// cached by it downstream stays valid. The buckets are layered maps (model/layered-map.ts): a
// version copies only its changes, and every version stays valid for whoever holds it.
import { LayeredMap } from '../model/layered-map.js';
import type { DestinationRuleResource, Subset } from './types.js';
import { mergeGroups, ruleHost, type MergedGroup } from './destination-rule-merge.js';
import { bestMatch } from './hosts.js';
import { visibleTo } from './visibility.js';

/** Mesh-wide rules live here, as in Istio (`istio-system` is Istio's default root namespace). */
export const ROOT_NAMESPACE = 'istio-system';

/** More rules touched since the last index built than this: the next one is built whole. */
const MAX_DERIVED_RULES = 256;

interface Rule {
  readonly rule: DestinationRuleResource;
  /** Its host, a short name resolved in its namespace. */
  readonly host: string;
}

/** The rules of one namespace and exact host, in config order, and what they merge into. */
interface Bucket {
  readonly rules: readonly DestinationRuleResource[];
  readonly groups: readonly MergedGroup[];
  readonly merged: readonly Rule[];
}

type Hosts = LayeredMap<string, Bucket>;

export class DestinationRuleIndex {
  private constructor(
    /** By namespace, then exact host. */
    private readonly exact: LayeredMap<string, Hosts>,
    /** By namespace, the merged rules whose host is a wildcard (`*`, `*.suffix`), in config order. */
    private readonly wildcard: ReadonlyMap<string, readonly Rule[]>,
    /** How many rules (before merging) it indexes. */
    private readonly size: number,
  ) {}

  /** The index of `rules`, built whole. */
  static of(rules: readonly DestinationRuleResource[]): DestinationRuleIndex {
    const exact = new Map<string, Map<string, DestinationRuleResource[]>>();
    const wild = new Map<string, DestinationRuleResource[]>();
    for (const rule of rules) {
      const host = ruleHost(rule);
      if (host.startsWith('*')) push(wild, rule.namespace, rule);
      else {
        let hosts = exact.get(rule.namespace);
        if (!hosts) exact.set(rule.namespace, (hosts = new Map<string, DestinationRuleResource[]>()));
        push(hosts, host, rule);
      }
    }
    const byNamespace = new Map<string, Hosts>();
    for (const [ns, hosts] of exact) {
      const buckets = new Map<string, Bucket>();
      for (const [host, list] of hosts) buckets.set(host, bucket(list, host));
      byNamespace.set(ns, LayeredMap.of(buckets));
    }
    const wildcard = new Map<string, Rule[]>();
    for (const [ns, list] of wild) wildcard.set(ns, mergeGroups(list).map(ruleOf));
    return new DestinationRuleIndex(LayeredMap.of(byNamespace), wildcard, rules.length);
  }

  /**
   * The index of `next`, which is `base`'s list less `removed` plus `added` (every other rule at
   * its place); undefined where that does not account for `next` or a wildcard rule is touched.
   * Static: the instance's public methods are its lookups (a build records each one it makes).
   */
  static derived(
    base: DestinationRuleIndex,
    next: readonly DestinationRuleResource[],
    removed: Iterable<DestinationRuleResource>,
    added: Iterable<DestinationRuleResource>,
  ): DestinationRuleIndex | undefined {
    /** The touched buckets' rules, by namespace and host. */
    const touched = new Map<string, Map<string, DestinationRuleResource[]>>();
    const rulesOf = (rule: DestinationRuleResource): DestinationRuleResource[] | undefined => {
      const host = ruleHost(rule);
      if (host.startsWith('*')) return undefined;
      let hosts = touched.get(rule.namespace);
      if (!hosts) touched.set(rule.namespace, (hosts = new Map<string, DestinationRuleResource[]>()));
      let list = hosts.get(host);
      if (!list) hosts.set(host, (list = [...(base.exact.get(rule.namespace)?.get(host)?.rules ?? [])]));
      return list;
    };
    let size = base.size;
    for (const rule of removed) {
      const list = rulesOf(rule);
      const at = list ? list.indexOf(rule) : -1;
      if (!list || at < 0) return undefined;
      list.splice(at, 1);
      size--;
    }
    for (const rule of added) {
      const list = rulesOf(rule);
      if (!list) return undefined;
      list.push(rule);
      size++;
    }
    if (size !== next.length) return undefined;
    const at = placesIn(next);
    const namespaces: [string, Hosts | undefined][] = [];
    for (const [ns, hosts] of touched) {
      const updates: [string, Bucket | undefined][] = [];
      for (const [host, list] of hosts) {
        const places = list.map((r) => at(r));
        if (places.some((p) => p < 0)) return undefined;
        const ordered = list.map((r, i) => [places[i] as number, r] as const).sort(([a], [b]) => a - b);
        const rules = ordered.map(([, r]) => r);
        const before = base.exact.get(ns)?.get(host);
        updates.push([host, rules.length > 0 ? bucket(rules, host, before?.groups) : undefined]);
      }
      const after = (base.exact.get(ns) ?? EMPTY_HOSTS).with(updates);
      namespaces.push([ns, after.size > 0 ? after : undefined]);
    }
    return new DestinationRuleIndex(base.exact.with(namespaces), base.wildcard, size);
  }

  lookup(
    host: string,
    proxyNamespace: string,
    serviceNamespace?: string,
  ): DestinationRuleResource | undefined {
    for (const ns of [proxyNamespace, serviceNamespace, ROOT_NAMESPACE]) {
      if (ns === undefined) continue;
      const hosts = this.exact.get(ns);
      const wildcard = this.wildcard.get(ns);
      if (!hosts && !wildcard) continue;
      const visible = (r: Rule): boolean => visibleTo(r.rule.spec.exportTo, r.rule.namespace, proxyNamespace);
      const exact = hosts?.get(host)?.merged.find(visible);
      if (exact) return exact.rule;
      let best: { rule: DestinationRuleResource; specificity: number } | undefined;
      for (const r of wildcard ?? []) {
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

const EMPTY_HOSTS: Hosts = LayeredMap.of(new Map<string, Bucket>());

function bucket(
  rules: readonly DestinationRuleResource[],
  host: string,
  previous?: readonly MergedGroup[],
): Bucket {
  const groups = mergeGroups(rules, previous);
  return { rules, groups, merged: groups.map((g) => ({ rule: g.rule, host })) };
}

function ruleOf(group: MergedGroup): Rule {
  return { rule: group.rule, host: ruleHost(group.rule) };
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** A few lookups scan the list (no allocation); more index it once. */
function placesIn(list: readonly DestinationRuleResource[]): (rule: DestinationRuleResource) => number {
  let scans = 0;
  let byRule: Map<DestinationRuleResource, number> | undefined;
  return (rule) => {
    if (!byRule && ++scans <= 16) return list.indexOf(rule);
    byRule ??= new Map(list.map((r, i) => [r, i]));
    return byRule.get(rule) ?? -1;
  };
}

/** Each list's index (dropped with the list). */
const INDEXES = new WeakMap<readonly DestinationRuleResource[], DestinationRuleIndex>();

/** A list's index to derive from, and the rules since (kept until the list's index is made). */
interface PendingStep {
  readonly base: DestinationRuleIndex;
  readonly removed: ReadonlySet<DestinationRuleResource>;
  readonly added: ReadonlySet<DestinationRuleResource>;
}

const STEPS = new WeakMap<readonly DestinationRuleResource[], PendingStep>();

/** The index of `rules`: derived from an earlier list's when a step noted how, else built whole. */
export function destinationRuleIndex(rules: readonly DestinationRuleResource[]): DestinationRuleIndex {
  let index = INDEXES.get(rules);
  if (index) return index;
  const step = STEPS.get(rules);
  STEPS.delete(rules);
  index =
    (step && DestinationRuleIndex.derived(step.base, rules, step.removed, step.added)) ??
    DestinationRuleIndex.of(rules);
  INDEXES.set(rules, index);
  return index;
}

/**
 * `next` is `previous` less `removed` plus `added`, every other rule at its place (a config step,
 * mesh/config-change.ts): its index may be derived from `previous`'s, or from the one an earlier
 * noted step derives from. Nothing is noted when neither has one, or too many rules changed since.
 */
export function noteDestinationRuleStep(
  previous: readonly DestinationRuleResource[],
  next: readonly DestinationRuleResource[],
  removed: Iterable<DestinationRuleResource>,
  added: Iterable<DestinationRuleResource>,
): void {
  if (previous === next || INDEXES.has(next)) return;
  const built = INDEXES.get(previous);
  const earlier = built ? undefined : STEPS.get(previous);
  const base = built ?? earlier?.base;
  if (!base) return;
  const gone = new Set(earlier?.removed);
  const come = new Set(earlier?.added);
  for (const rule of removed) {
    // Added since the base and now removed: the base never had it.
    if (!come.delete(rule)) gone.add(rule);
  }
  for (const rule of added) come.add(rule);
  if (gone.size + come.size <= MAX_DERIVED_RULES) STEPS.set(next, { base, removed: gone, added: come });
}

export function subsetOf(rule: DestinationRuleResource | undefined, name: string): Subset | undefined {
  return rule?.spec.subsets?.find((s) => s.name === name);
}
