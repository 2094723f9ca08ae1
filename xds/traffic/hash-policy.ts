// A DestinationRule's consistentHash as the route's hash_policy (Envoy; gRFC A42 for gRPC, which
// hashes on a header only). The cluster's RING_HASH/MAGLEV policy is rendered with the cluster.
import type { _envoy_config_route_v3_RouteAction_HashPolicy as HashPolicy } from '../generated/envoy/config/route/v3/RouteAction.js';
import type { ConsistentHashLB, DestinationRuleResource, LoadBalancerSettings } from '../../mesh/types.js';
import { subsetOf } from '../../mesh/destination-rule-index.js';
import { durationOf } from './fault.js';
import type { RouteClient, RouteContext } from './route-context.js';

/** The load balancer settings in force for host:port (subset over rule; port-level over top-level). */
export function loadBalancerFor(
  rule: DestinationRuleResource | undefined,
  port: number,
  subset: string,
): LoadBalancerSettings | undefined {
  if (!rule) return undefined;
  const policies = [subsetOf(rule, subset)?.trafficPolicy, rule.spec.trafficPolicy];
  for (const policy of policies) {
    const portLevel = policy?.portLevelSettings?.find((p) => p.port.number === port)?.loadBalancer;
    const lb = portLevel ?? policy?.loadBalancer;
    if (lb) return lb;
  }
  return undefined;
}

export function hashPolicies(hash: ConsistentHashLB, client: RouteClient): HashPolicy[] {
  if (hash.httpHeaderName) return [{ header: { header_name: hash.httpHeaderName.toLowerCase() } }];
  if (client === 'grpc') return []; // gRFC A42: header only (and channel id); see route-limitations.ts
  if (hash.httpCookie)
    return [
      {
        cookie: {
          name: hash.httpCookie.name,
          ...(hash.httpCookie.path !== undefined && { path: hash.httpCookie.path }),
          ...(hash.httpCookie.ttl !== undefined && { ttl: durationOf(hash.httpCookie.ttl) }),
        },
      },
    ];
  if (hash.useSourceIp) return [{ connection_properties: { source_ip: true } }];
  if (hash.httpQueryParameterName) return [{ query_parameter: { name: hash.httpQueryParameterName } }];
  return [];
}

/** The hash policy for traffic to host:port[/subset] as this proxy sees the DestinationRules. */
export function hashPolicyFor(ctx: RouteContext, host: string, port: number, subset: string): HashPolicy[] {
  const rule = ctx.index.destinationRules.lookup(
    host,
    ctx.proxyNamespace,
    ctx.catalog.service(host)?.namespace,
  );
  const hash = loadBalancerFor(rule, port, subset)?.consistentHash;
  return hash ? hashPolicies(hash, ctx.client) : [];
}
