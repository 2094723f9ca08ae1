// Several DestinationRules for one host in one namespace act as one, as Istio merges them (pilot's
// mergeDestinationRule, with ENABLE_ENHANCED_DESTINATIONRULE_MERGE, the default since 1.24): rules
// of the same namespace whose host resolves to the same name, with the same exportTo and the same
// workloadSelector, become the first of them (config order: file path, then document order; Istio
// uses the oldest) with the subsets of all of them — a subset name already defined is skipped, as
// Istio skips it with a warning — and the first top-level traffic policy any of them sets. Rules
// with different exportTo stay apart, and the lookup takes the first one visible. A group never
// spans two (namespace, host) buckets, so the index merges each bucket on its own (mergeGroups) and
// an edit merges again only the buckets it touched (destination-rule-index.ts).
import type { DestinationRuleResource, Subset } from './types.js';
import { resolveHost } from './hosts.js';

/** A subset left out of the merge because an earlier rule of the same host defines that name. */
export interface SkippedSubset {
  readonly rule: DestinationRuleResource;
  /** Index in `rule.spec.subsets`. */
  readonly index: number;
  readonly host: string;
  /** The rule the merged one is named after (the first of the group). */
  readonly mergedInto: DestinationRuleResource;
}

/** A top-level traffic policy left out because an earlier rule of the same host sets one. */
export interface IgnoredPolicy {
  readonly rule: DestinationRuleResource;
  readonly host: string;
  /** The rule whose traffic policy applies. */
  readonly keptFrom: DestinationRuleResource;
}

export interface MergedDestinationRules {
  /** One rule per group, in the order of each group's first rule; one that gains nothing is itself. */
  readonly rules: readonly DestinationRuleResource[];
  readonly skippedSubsets: readonly SkippedSubset[];
  readonly ignoredPolicies: readonly IgnoredPolicy[];
}

/** One group merged: its members in config order, and the rule they act as. */
export interface MergedGroup {
  readonly members: readonly DestinationRuleResource[];
  /** The first member, or a copy of it with the group's subsets and traffic policy. */
  readonly rule: DestinationRuleResource;
  readonly skippedSubsets: readonly SkippedSubset[];
  readonly ignoredPolicies: readonly IgnoredPolicy[];
}

const MEMO = new WeakMap<readonly DestinationRuleResource[], MergedDestinationRules>();

/** The rules as Istio applies them; memoized per list (a config's list does not change). */
export function mergeDestinationRules(rules: readonly DestinationRuleResource[]): MergedDestinationRules {
  let merged = MEMO.get(rules);
  if (!merged) {
    const groups = mergeGroups(rules);
    merged = {
      rules: groups.map((g) => g.rule),
      skippedSubsets: groups.flatMap((g) => g.skippedSubsets),
      ignoredPolicies: groups.flatMap((g) => g.ignoredPolicies),
    };
    MEMO.set(rules, merged);
  }
  return merged;
}

/**
 * The groups of `rules` (config order), each merged, in the order of each group's first rule. A
 * group whose members are those of one of `previous` (the same rules, in the same order) is that
 * one, merged rule and all: what is cached by the merged rule downstream stays valid.
 */
export function mergeGroups(
  rules: readonly DestinationRuleResource[],
  previous: readonly MergedGroup[] = [],
): MergedGroup[] {
  const groups = new Map<string, { readonly host: string; readonly members: DestinationRuleResource[] }>();
  for (const rule of rules) {
    const { host, key } = groupOf(rule);
    const group = groups.get(key);
    if (group) group.members.push(rule);
    else groups.set(key, { host, members: [rule] });
  }
  const out: MergedGroup[] = [];
  for (const { host, members } of groups.values())
    out.push(previous.find((g) => sameMembers(g.members, members)) ?? mergeGroup(host, members));
  return out;
}

function sameMembers(a: readonly DestinationRuleResource[], b: readonly DestinationRuleResource[]): boolean {
  return a.length === b.length && a.every((r, i) => r === b[i]);
}

function mergeGroup(host: string, members: readonly DestinationRuleResource[]): MergedGroup {
  const first = members[0] as DestinationRuleResource;
  if (members.length === 1) return { members, rule: first, skippedSubsets: [], ignoredPolicies: [] };
  const skippedSubsets: SkippedSubset[] = [];
  const ignoredPolicies: IgnoredPolicy[] = [];
  const subsets: Subset[] = [];
  const names = new Set<string>();
  let policyFrom: DestinationRuleResource | undefined;
  for (const rule of members) {
    (rule.spec.subsets ?? []).forEach((s, index) => {
      if (names.has(s.name)) skippedSubsets.push({ rule, index, host, mergedInto: first });
      else {
        names.add(s.name);
        subsets.push(s);
      }
    });
    if (!rule.spec.trafficPolicy) continue;
    if (policyFrom) ignoredPolicies.push({ rule, host, keptFrom: policyFrom });
    else policyFrom = rule;
  }
  const trafficPolicy = policyFrom?.spec.trafficPolicy;
  // Nothing added to the first: it stays itself (what is memoized by rule keeps working).
  if ((policyFrom ?? first) === first && subsets.length === (first.spec.subsets ?? []).length)
    return { members, rule: first, skippedSubsets, ignoredPolicies };
  const rule: DestinationRuleResource = {
    ...first,
    spec: {
      ...first.spec,
      ...(trafficPolicy && { trafficPolicy }),
      ...(subsets.length > 0 && { subsets }),
    },
  };
  return { members, rule, skippedSubsets, ignoredPolicies };
}

/** Per rule, its resolved host and group key: a config step keeps every rule but the edited ones. */
const GROUP_OF = new WeakMap<DestinationRuleResource, { readonly host: string; readonly key: string }>();

/** A rule's host, resolved in its namespace (what the index files it under). */
export function ruleHost(rule: DestinationRuleResource): string {
  return groupOf(rule).host;
}

function groupOf(rule: DestinationRuleResource): { readonly host: string; readonly key: string } {
  let group = GROUP_OF.get(rule);
  if (!group) {
    const host = resolveHost(rule.spec.host, rule.namespace);
    const key = JSON.stringify([rule.namespace, host, exportKey(rule), selectorKey(rule)]);
    GROUP_OF.set(rule, (group = { host, key }));
  }
  return group;
}

/** exportTo as a set: absent means everyone (`*`), `.` the rule's own namespace. */
function exportKey(rule: DestinationRuleResource): string[] {
  const list = rule.spec.exportTo?.length ? rule.spec.exportTo : ['*'];
  return [...new Set(list.map((e) => (e === '.' ? rule.namespace : e)))].sort();
}

function selectorKey(rule: DestinationRuleResource): [string, string][] | null {
  const labels = rule.spec.workloadSelector?.matchLabels;
  return labels ? Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : null;
}
