// The traffic policy a cluster gets from its DestinationRule, merged as Istio merges it: the rule's
// top level, overridden by the rule's port-level settings for the port, then by the subset's top
// level, then by the subset's port-level settings. Each component (loadBalancer, connectionPool,
// outlierDetection) is replaced whole, never merged field by field. `tls` is rendered elsewhere.
import type { MeshIndex } from '../../mesh/mesh-index.js';
import type {
  ConnectionPoolSettings,
  DestinationRuleResource,
  LoadBalancerSettings,
  OutlierDetection,
  TrafficPolicy,
} from '../../mesh/types.js';
import { subsetOf } from '../../mesh/destination-rule-index.js';

export interface ClusterPolicy {
  readonly loadBalancer?: LoadBalancerSettings;
  readonly connectionPool?: ConnectionPoolSettings;
  readonly outlierDetection?: OutlierDetection;
}

/** Where a cluster's policy came from: the rule, and the subset when the cluster is one. */
export interface PolicySource {
  readonly rule: DestinationRuleResource;
  readonly policy: ClusterPolicy;
}

export function mergePolicy(
  top: TrafficPolicy | undefined,
  subset: TrafficPolicy | undefined,
  port: number,
): ClusterPolicy {
  return overlay(overlay({}, top, port), subset, port);
}

function overlay(base: ClusterPolicy, policy: TrafficPolicy | undefined, port: number): ClusterPolicy {
  if (!policy) return base;
  const atPort = policy.portLevelSettings?.find((p) => p.port.number === port);
  const pick = <K extends keyof ClusterPolicy>(k: K): ClusterPolicy[K] => atPort?.[k] ?? policy[k] ?? base[k];
  return strip({
    loadBalancer: pick('loadBalancer'),
    connectionPool: pick('connectionPool'),
    outlierDetection: pick('outlierDetection'),
  });
}

function strip(p: ClusterPolicy): ClusterPolicy {
  return Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined));
}

/**
 * The policy of cluster (host, port, subset) for a proxy in `proxyNamespace`; undefined when no
 * DestinationRule applies, or the subset is not defined by the rule that applies.
 */
export function clusterPolicy(
  index: MeshIndex,
  host: string,
  port: number,
  subset: string,
  proxyNamespace: string,
  serviceNamespace: string | undefined,
): PolicySource | undefined {
  const rule = index.destinationRules.lookup(host, proxyNamespace, serviceNamespace);
  if (!rule) return undefined;
  if (subset === '') return { rule, policy: mergePolicy(rule.spec.trafficPolicy, undefined, port) };
  const s = subsetOf(rule, subset);
  return s && { rule, policy: mergePolicy(rule.spec.trafficPolicy, s.trafficPolicy, port) };
}
