// What of the mesh config some versions of a client are given differently because of a known defect
// (xds/proxy/client-capabilities.ts, the rules that apply to some versions only), as limitations for
// /debug/configz: each DestinationRule field that such a rule changes, with the clients and why.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { LoadBalancerSettings, TrafficPolicy } from '../../mesh/types.js';
import { resourceKey } from '../../mesh/types.js';
import { CLIENT_RULES, type ClientRule } from '../proxy/client-capabilities.js';
import type { TrafficLimitation } from './cluster-limitations.js';

export function clientLimitations(
  config: MeshConfig,
  rules: readonly ClientRule[] = CLIENT_RULES,
): TrafficLimitation[] {
  const ringHash = rules.filter((r) => r.versioned && r.lbPolicies?.withheld.includes('RING_HASH'));
  if (ringHash.length === 0) return [];
  const out: TrafficLimitation[] = [];
  for (const rule of config.destinationRules) {
    const resource = resourceKey(rule);
    const check = (path: string, lb: LoadBalancerSettings | undefined): void => {
      if (!lb?.consistentHash) return;
      for (const r of ringHash)
        out.push({
          resource,
          field: `${path}.loadBalancer.consistentHash`,
          clients: ['grpc'],
          reason: `${r.clients}: ${r.rendering}. Why: ${r.reason} (${r.reference}); other gRPC clients get RING_HASH`,
          rule: r.id,
        });
    };
    const policies: [string, TrafficPolicy | undefined][] = [
      ['spec.trafficPolicy', rule.spec.trafficPolicy],
      ...(rule.spec.subsets ?? []).map((s, i): [string, TrafficPolicy | undefined] => [
        `spec.subsets[${i}].trafficPolicy`,
        s.trafficPolicy,
      ]),
    ];
    for (const [path, policy] of policies) {
      check(path, policy?.loadBalancer);
      policy?.portLevelSettings?.forEach((p, i) => check(`${path}.portLevelSettings[${i}]`, p.loadBalancer));
    }
  }
  return out;
}
