// Locality load balancing, as Istio renders a DestinationRule's `localityLbSetting` into a cluster's
// load assignment for one proxy (its pilot/pkg/networking/core/loadbalancer semantics):
//
// - `distribute`: the first rule whose `from` matches the proxy's locality sets each locality's
//   weight (its share of the rule's percentage, by its own weight); localities no `to` names are
//   left out. Needs no outlier detection.
// - otherwise, only when the policy has `outlierDetection` (without it nothing would ever be
//   ejected, so nothing would fail over): priorities by closeness to the proxy. By default 0 for
//   the same region/zone/subzone, 1 same zone, 2 same region, 3 elsewhere; `failover` turns a
//   region other than the one named for the proxy's region into 4. `failoverPriority` ranks each
//   endpoint by how many of the listed labels, in order, it shares with the proxy (`key=value`
//   compares with the value instead); with `failover` too, the locality rank refines each label
//   rank. The distinct priorities are then renumbered 0, 1, 2, … (gRPC refuses gaps, gRFC A27).
// - `enabled: false` turns all of it off.
//
// What a kind of client does with the result differs in one place each: Envoy needs
// `locality_weighted_lb_config` on the cluster to honour locality weights (wantsLocalityWeights),
// and its outlier detection to leave an unhealthy priority; gRPC clients always weigh localities
// (weighted_target) and leave a priority whose endpoints are unreachable (gRFC A27), with no outlier
// detection (cluster-limitations.ts lists that).
import type { Locality, PortEndpoint } from '../../model/endpoint.js';
import { localityKey } from '../../model/endpoint.js';
import type {
  DestinationRuleResource,
  LoadBalancerSettings,
  LocalityLbSetting,
  TrafficPolicy,
} from '../../mesh/types.js';
import { topologyLabels } from '../../mesh/topology.js';
import type { Proxy } from '../proxy/proxy.js';
import { proxyLabels } from './route-context.js';
import type { ClusterPolicy } from './traffic-policy.js';

type Distribute = NonNullable<LocalityLbSetting['distribute']>[number];
type Failover = NonNullable<LocalityLbSetting['failover']>[number];

/** What a cluster's policy asks of locality balancing, before any proxy is considered. */
export type LocalityLbPlan =
  | { readonly mode: 'none' }
  | { readonly mode: 'distribute'; readonly distribute: readonly Distribute[] }
  | {
      readonly mode: 'failover';
      readonly failover: readonly Failover[];
      readonly failoverPriority: readonly string[];
    };

const NONE: LocalityLbPlan = { mode: 'none' };

/** The plan of a cluster with this (merged) policy; `none` without a DestinationRule. */
export function localityLbPlan(policy: ClusterPolicy | undefined): LocalityLbPlan {
  const setting = policy?.loadBalancer?.localityLbSetting;
  if (setting?.enabled === false) return NONE;
  if (setting?.distribute?.length) return { mode: 'distribute', distribute: setting.distribute };
  // Istio's rule: failover needs outlier detection, else Envoy would never leave a priority.
  if (!policy?.outlierDetection) return NONE;
  return {
    mode: 'failover',
    failover: setting?.failover ?? [],
    failoverPriority: setting?.failoverPriority ?? [],
  };
}

/**
 * Whether an Envoy cluster needs `common_lb_config.locality_weighted_lb_config` (Istio sets it for
 * `distribute`, and for an explicit `failover` or `failoverPriority` that is in effect).
 */
export function wantsLocalityWeights(policy: ClusterPolicy | undefined): boolean {
  const plan = localityLbPlan(policy);
  if (plan.mode === 'distribute') return true;
  return plan.mode === 'failover' && (plan.failover.length > 0 || plan.failoverPriority.length > 0);
}

/** What of a proxy locality balancing looks at: its locality, and its labels with the topology ones. */
export interface ProxyPlace {
  readonly locality: Locality;
  readonly labels: Readonly<Record<string, string>>;
}

export function proxyPlace(proxy: Proxy): ProxyPlace {
  return {
    locality: proxy.locality,
    labels: topologyLabels(proxyLabels(proxy), proxy.locality, proxy.network),
  };
}

/**
 * The part of `place` the plan's result depends on: proxies with equal keys get the same load
 * assignment, so it is built once for all of them.
 */
export function placeKey(plan: LocalityLbPlan, place: ProxyPlace): string {
  switch (plan.mode) {
    case 'none':
      return '';
    case 'distribute':
      return `d${plan.distribute.findIndex((d) => localityMatches(place.locality, d.from))}`;
    case 'failover': {
      const byLocality = plan.failoverPriority.length === 0 || plan.failover.length > 0;
      const labels =
        Object.keys(place.labels).length === 0
          ? null
          : priorityLabels(plan.failoverPriority).map((l) => l.value ?? place.labels[l.key] ?? '');
      return JSON.stringify(['f', byLocality ? localityKey(place.locality) : '', labels]);
    }
  }
}

/**
 * What of a proxy the locality rules of a whole mesh can read, so that EDS views are keyed by that
 * alone (as Istio's endpoint builder keys by locality, network and only the failoverPriority labels):
 * - `namespace`: whether some rule has subsets or reads the locality or labels (rules are looked up
 *   and exported by namespace; a rule without either leaves every assignment as it is, so the first
 *   such rule moves no stream to a new view);
 * - `locality`: some rule may prioritize by closeness (failover, or outlier detection alone) or
 *   `distribute` by the proxy's locality;
 * - `labels`: the proxy label keys some `failoverPriority` compares (topology keys included: the
 *   network and locality labels); `anyLabels`, whether such a rule exists at all (it ranks by labels
 *   only for a proxy that has some).
 * An over-approximation across rules, levels (port, subset) and namespaces: never finer than needed
 * by any one cluster, which is what makes it safe to share one view.
 */
export interface LocalityReads {
  readonly namespace: boolean;
  readonly locality: boolean;
  readonly anyLabels: boolean;
  readonly labels: readonly string[];
}

const READS = new WeakMap<readonly DestinationRuleResource[], LocalityReads>();

/**
 * Equal reads as one object: a config change that leaves them equal gives the same object, so each
 * stream's EDS view key is reused by identity instead of recomputed (endpoints.ts). Bounded: the
 * variety is in rule contents, and past the bound the map starts over.
 */
const CANONICAL = new Map<string, LocalityReads>();
const MAX_CANONICAL = 64;

/** localityReads, once per rule list (a mesh config's rules are immutable), equal answers as one object. */
export function localityReads(rules: readonly DestinationRuleResource[]): LocalityReads {
  let reads = READS.get(rules);
  if (!reads) {
    const computed = readsOf(rules);
    const key = JSON.stringify(computed);
    reads = CANONICAL.get(key);
    if (!reads) {
      if (CANONICAL.size >= MAX_CANONICAL) CANONICAL.clear();
      CANONICAL.set(key, (reads = computed));
    }
    READS.set(rules, reads);
  }
  return reads;
}

function readsOf(rules: readonly DestinationRuleResource[]): LocalityReads {
  let locality = false;
  let anyLabels = false;
  const labels = new Set<string>();
  for (const rule of rules) {
    const policies: TrafficPolicy[] = [];
    if (rule.spec.trafficPolicy) policies.push(rule.spec.trafficPolicy);
    for (const s of rule.spec.subsets ?? []) if (s.trafficPolicy) policies.push(s.trafficPolicy);
    const levels = policies.flatMap((p) => [p, ...(p.portLevelSettings ?? [])]);
    const outlier = levels.some((l) => l.outlierDetection !== undefined);
    // A cluster's merged loadBalancer is one of these, whole (traffic-policy.ts), or none at all
    // when the rule's top level sets none.
    const balancers: (LoadBalancerSettings | undefined)[] = levels.map((l) => l.loadBalancer);
    if (!rule.spec.trafficPolicy?.loadBalancer) balancers.push(undefined);
    for (const lb of balancers) {
      const setting = lb?.localityLbSetting;
      if (setting?.enabled === false) continue;
      if (setting?.distribute?.length) {
        locality = true;
        continue;
      }
      if (!outlier) continue;
      const priority = setting?.failoverPriority ?? [];
      if (priority.length === 0 || (setting?.failover?.length ?? 0) > 0) locality = true;
      if (priority.length > 0) anyLabels = true;
      for (const entry of priority) if (!entry.includes('=')) labels.add(entry);
    }
  }
  // Without locality reads, only a subset's endpoints differ by which rules a namespace sees.
  const subsets = rules.some((r) => (r.spec.subsets?.length ?? 0) > 0);
  return { namespace: subsets || locality || anyLabels, locality, anyLabels, labels: [...labels].sort() };
}

/** The part of `place` that `reads` says some rule may look at (placeKey for the whole mesh). */
export function meshPlaceKey(reads: LocalityReads, place: ProxyPlace): unknown[] {
  const out: unknown[] = [];
  if (reads.locality) out.push(localityKey(place.locality));
  if (reads.anyLabels) {
    out.push(Object.keys(place.labels).length > 0);
    for (const key of reads.labels) out.push(place.labels[key] ?? null);
  }
  return out;
}

/** One locality's endpoints at one priority, with the locality's weight. */
export interface PriorityGroup {
  readonly locality: Locality;
  readonly priority: number;
  readonly weight: number;
  readonly endpoints: readonly PortEndpoint[];
}

/** The endpoints grouped by locality and priority for a proxy at `place`, ordered by priority then locality. */
export function priorityGroups(
  endpoints: readonly PortEndpoint[],
  plan: LocalityLbPlan,
  place: ProxyPlace,
): PriorityGroup[] {
  const byLocality = groupBy(endpoints, (pe) => localityKey(pe.endpoint.locality));
  const plain = (): PriorityGroup[] =>
    [...byLocality.values()].map((members) => group(members, 0, sumWeights(members)));
  switch (plan.mode) {
    case 'none':
      return sortGroups(plain());
    case 'distribute': {
      const rule = plan.distribute.find((d) => localityMatches(place.locality, d.from));
      return sortGroups(rule ? distribute(byLocality, rule) : plain());
    }
    case 'failover': {
      const rank = failoverRank(plan, place);
      const raw = groupBy(endpoints, (pe) => String(rank(pe)));
      // Renumber the distinct priorities 0, 1, 2, … in order.
      const order = [...raw.keys()].map(Number).sort((a, b) => a - b);
      return sortGroups(
        order.flatMap((r, priority) =>
          [...groupBy(raw.get(String(r)) ?? [], (pe) => localityKey(pe.endpoint.locality)).values()].map(
            (members) => group(members, priority, sumWeights(members)),
          ),
        ),
      );
    }
  }
}

// ---- distribute ---------------------------------------------------------------------------------

function distribute(byLocality: ReadonlyMap<string, PortEndpoint[]>, rule: Distribute): PriorityGroup[] {
  const claimed = new Set<string>();
  const out: PriorityGroup[] = [];
  for (const [target, percent] of Object.entries(rule.to)) {
    const matched = [...byLocality].filter(
      ([key, members]) => !claimed.has(key) && localityMatches(localityOf(members), target),
    );
    const total = matched.reduce((sum, [, members]) => sum + sumWeights(members), 0);
    for (const [key, members] of matched) {
      claimed.add(key);
      // Several localities under one pattern share its percentage by their own weights (rounded up,
      // as Istio does, so none drops to 0).
      const weight = Math.ceil((sumWeights(members) * percent) / total);
      if (weight > 0) out.push(group(members, 0, weight));
    }
  }
  return out;
}

// ---- failover -----------------------------------------------------------------------------------

/** Each endpoint's priority before renumbering. */
function failoverRank(
  plan: Extract<LocalityLbPlan, { mode: 'failover' }>,
  place: ProxyPlace,
): (pe: PortEndpoint) => number {
  const labels = priorityLabels(plan.failoverPriority);
  const useLabels = labels.length > 0 && Object.keys(place.labels).length > 0;
  const useLocality = labels.length === 0 || plan.failover.length > 0;
  // Only the first failover entry for the proxy's region counts, as in Istio.
  const failoverTo = plan.failover.find((f) => f.from === place.locality.region)?.to;
  return (pe) => {
    let rank = 0;
    if (useLabels) {
      const endpointLabels = topologyLabels(pe.endpoint.labels, pe.endpoint.locality, pe.endpoint.network);
      const matched = labels.findIndex(
        (l) => (l.value ?? place.labels[l.key] ?? '') !== (endpointLabels[l.key] ?? ''),
      );
      rank = matched === -1 ? 0 : labels.length - matched;
    }
    if (!useLocality) return rank;
    let closeness = localityRank(place.locality, pe.endpoint.locality);
    if (closeness === 3 && failoverTo !== undefined && pe.endpoint.locality.region !== failoverTo)
      closeness = 4;
    // Five locality ranks (0–4) fit under each label rank.
    return rank * 5 + closeness;
  };
}

/** 0 same subzone, 1 same zone, 2 same region, 3 another region. */
function localityRank(proxy: Locality, endpoint: Locality): number {
  if (proxy.region !== endpoint.region) return 3;
  if (proxy.zone !== endpoint.zone) return 2;
  if (proxy.subzone !== endpoint.subzone) return 1;
  return 0;
}

/** `failoverPriority` entries: a label key, or `key=value` to compare with a fixed value. */
function priorityLabels(entries: readonly string[]): { key: string; value: string | undefined }[] {
  return entries.map((entry) => {
    const at = entry.indexOf('=');
    return at === -1
      ? { key: entry, value: undefined }
      : { key: entry.slice(0, at), value: entry.slice(at + 1) };
  });
}

// ---- shared -------------------------------------------------------------------------------------

/**
 * Istio's locality pattern: `region`, `region/zone`, `region/zone/subzone`, each part possibly `*`
 * (and a trailing `*` for "anything below"); a part left out matches anything.
 */
export function localityMatches(locality: Locality, pattern: string): boolean {
  const [region = '', zone = '', subzone = ''] = pattern.split('/');
  const part = (want: string, have: string, optional: boolean): boolean =>
    want === '*' || (optional && want === '') || want === have;
  return (
    part(region, locality.region, false) &&
    part(zone, locality.zone, true) &&
    part(subzone, locality.subzone, true)
  );
}

function group(members: readonly PortEndpoint[], priority: number, weight: number): PriorityGroup {
  return { locality: localityOf(members), priority, weight, endpoints: members };
}

function localityOf(members: readonly PortEndpoint[]): Locality {
  return members[0]?.endpoint.locality ?? { region: '', zone: '', subzone: '' };
}

function sumWeights(members: readonly PortEndpoint[]): number {
  return members.reduce((sum, pe) => sum + pe.endpoint.weight, 0);
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

function sortGroups(groups: PriorityGroup[]): PriorityGroup[] {
  return groups.sort(
    (a, b) => a.priority - b.priority || compare(localityKey(a.locality), localityKey(b.locality)),
  );
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
