// What merging several DestinationRules for one host leaves out (mesh/destination-rule-merge.ts), as
// limitations for /debug/configz: a subset whose name an earlier rule of the host already defines
// (Istio skips it with a warning), and a top-level traffic policy after the first (Istio keeps the
// first). Both apply to every client, since the merged rule is what every client is given.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import { mergeDestinationRules } from '../../mesh/destination-rule-merge.js';
import { resourceKey } from '../../mesh/types.js';
import type { TrafficLimitation } from './cluster-limitations.js';

export function mergeLimitations(config: MeshConfig): TrafficLimitation[] {
  const { skippedSubsets, ignoredPolicies } = mergeDestinationRules(config.destinationRules);
  return [
    ...skippedSubsets.map(({ rule, index, host, mergedInto }) => ({
      resource: resourceKey(rule),
      field: `spec.subsets[${index}]`,
      clients: ['envoy', 'grpc'] as const,
      reason: `not applied: subset ${rule.spec.subsets?.[index]?.name ?? ''} of ${host} is already defined by an earlier rule merged with this one into ${resourceKey(mergedInto)} (as Istio merges the DestinationRules of one host, it keeps the first definition of a subset)`,
    })),
    ...ignoredPolicies.map(({ rule, host, keptFrom }) => ({
      resource: resourceKey(rule),
      field: 'spec.trafficPolicy',
      clients: ['envoy', 'grpc'] as const,
      reason: `not applied: merged with the other DestinationRules of ${host} in its namespace, whose traffic policy is ${resourceKey(keptFrom)}'s (Istio keeps the first one set)`,
    })),
  ];
}
