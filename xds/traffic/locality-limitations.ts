// What of a DestinationRule's `localityLbSetting` is not in effect, for /debug/configz: `failover` and
// `failoverPriority` need outlier detection in the policy a cluster ends up with (Istio's rule; the
// rule's and subset's levels merge as traffic-policy.ts merges them), and proxyless gRPC clients
// fail over on reachability only. Mirrors xds/traffic/locality-lb.ts.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type {
  DestinationRuleResource,
  LoadBalancerSettings,
  OutlierDetection,
  PortTrafficPolicy,
  TrafficPolicy,
} from '../../mesh/types.js';
import { resourceKey } from '../../mesh/types.js';
import type { TrafficLimitation } from './cluster-limitations.js';

const NEEDS_OUTLIER_DETECTION =
  'failover needs outlierDetection (Istio’s rule): without it in this policy or one it inherits, the endpoints get no priorities and every locality is used alike';
const GRPC_FAILOVER =
  'gRPC clients get the priorities but no outlier detection (gRFC A50 cannot count errors in a row): they move to the next priority when every endpoint of one is unreachable, not when it answers with errors';

/** One level of a merged policy: where it is in the rule, and what it sets. */
interface Level {
  readonly path: string;
  readonly policy: Omit<PortTrafficPolicy, 'port'> | undefined;
}

export function localityLimitations(config: MeshConfig): TrafficLimitation[] {
  return config.destinationRules.flatMap(ruleLimitations);
}

function ruleLimitations(rule: DestinationRuleResource): TrafficLimitation[] {
  const resource = resourceKey(rule);
  const seen = new Set<string>();
  const out: TrafficLimitation[] = [];
  const add = (field: string, clients: TrafficLimitation['clients'], reason: string): void => {
    const key = `${field}\0${reason}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ resource, field, clients, reason });
  };
  const top = rule.spec.trafficPolicy;
  const subsets = [undefined, ...(rule.spec.subsets ?? []).map((s, i) => ({ s, i }))];
  // Every cluster of the rule: the ports some level names, and any other port (undefined).
  for (const port of [...portsNamed(rule), undefined])
    for (const sub of subsets) {
      const levels: Level[] = [
        ...policyLevels('spec.trafficPolicy', top, port),
        ...(sub ? policyLevels(`spec.subsets[${sub.i}].trafficPolicy`, sub.s.trafficPolicy, port) : []),
      ];
      const lb = last(levels, (p) => p?.loadBalancer);
      const od = last(levels, (p) => p?.outlierDetection);
      const setting = lb?.value.localityLbSetting;
      if (!lb || !setting || setting.enabled === false || setting.distribute?.length) continue;
      if (!setting.failover?.length && !setting.failoverPriority?.length) continue;
      const field = `${lb.path}.loadBalancer.localityLbSetting`;
      if (!od) add(field, ['envoy', 'grpc'], NEEDS_OUTLIER_DETECTION);
      else add(field, ['grpc'], GRPC_FAILOVER);
    }
  return out;
}

/** The levels of one traffic policy for `port`: its top level, then its settings for that port. */
function policyLevels(path: string, policy: TrafficPolicy | undefined, port: number | undefined): Level[] {
  if (!policy) return [];
  const i =
    port === undefined ? -1 : (policy.portLevelSettings ?? []).findIndex((p) => p.port.number === port);
  const atPort = i >= 0 ? policy.portLevelSettings?.[i] : undefined;
  return [{ path, policy }, ...(atPort ? [{ path: `${path}.portLevelSettings[${i}]`, policy: atPort }] : [])];
}

function portsNamed(rule: DestinationRuleResource): number[] {
  const policies = [rule.spec.trafficPolicy, ...(rule.spec.subsets ?? []).map((s) => s.trafficPolicy)];
  return [...new Set(policies.flatMap((p) => (p?.portLevelSettings ?? []).map((s) => s.port.number)))];
}

/** The most specific level that sets a component, and its value. */
function last<T extends LoadBalancerSettings | OutlierDetection>(
  levels: readonly Level[],
  pick: (policy: Level['policy']) => T | undefined,
): { path: string; value: T } | undefined {
  for (let i = levels.length - 1; i >= 0; i--) {
    const level = levels[i];
    const value = level && pick(level.policy);
    if (level && value) return { path: level.path, value };
  }
  return undefined;
}
