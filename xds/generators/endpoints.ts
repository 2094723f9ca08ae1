// EDS, shared by every kind of proxy: endpoints grouped by locality, each locality weighted by the sum
// of its endpoints' weights (gRPC ignores a locality without a weight, gRFC A27). A subset cluster
// (`outbound|PORT|SUBSET|HOST`) gets the endpoints matching the subset's labels in the
// DestinationRule the proxy's namespace sees.
import type { ClusterLoadAssignment } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { LocalityLbEndpoints } from '../generated/envoy/config/endpoint/v3/LocalityLbEndpoints.js';
import { localityKey, type PortEndpoint } from '../../model/endpoint.js';
import type { GenerateContext } from './generator.js';
import { parseClusterName } from './names.js';
import { encodeResource, type EncodedResource } from '../proto/resource.js';
import { ENDPOINT } from '../proto/type-urls.js';
import { findSubset, subsetEndpoints } from '../traffic/subsets.js';

/** Subsets come from the DestinationRules the proxy's namespace sees: proxies of one namespace share EDS. */
export const loadAssignmentViewKey = (proxy: GenerateContext['proxy']): string => proxy.namespace;

export function buildLoadAssignment(ctx: GenerateContext, name: string): EncodedResource | undefined {
  const { catalog } = ctx;
  const key = parseClusterName(name);
  if (!key || key.direction !== 'outbound') return undefined;
  const service = catalog.service(key.hostname);
  if (!service || service.resolution !== 'STATIC') return undefined;
  let endpoints = catalog.endpoints(key.hostname, key.port);
  if (key.subset !== '') {
    const subset = findSubset(ctx.index, catalog, key.hostname, key.subset, ctx.proxy.namespace);
    if (!subset) return undefined;
    endpoints = subsetEndpoints(endpoints, subset);
  }
  const assignment: ClusterLoadAssignment = { cluster_name: name, endpoints: groupByLocality(endpoints) };
  return encodeResource(ENDPOINT, name, assignment);
}

function groupByLocality(endpoints: readonly PortEndpoint[]): LocalityLbEndpoints[] {
  const groups = new Map<string, PortEndpoint[]>();
  for (const pe of endpoints) {
    const k = localityKey(pe.endpoint.locality);
    const list = groups.get(k) ?? [];
    list.push(pe);
    groups.set(k, list);
  }
  return [...groups.keys()].sort().map((k) => {
    const members = groups.get(k) ?? [];
    const locality = members[0]?.endpoint.locality;
    return {
      locality: {
        region: locality?.region ?? '',
        zone: locality?.zone ?? '',
        sub_zone: locality?.subzone ?? '',
      },
      load_balancing_weight: { value: members.reduce((sum, pe) => sum + pe.endpoint.weight, 0) },
      priority: 0,
      lb_endpoints: members
        .slice()
        .sort((a, b) => compare(`${a.endpoint.address}:${a.port}`, `${b.endpoint.address}:${b.port}`))
        .map((pe) => ({
          endpoint: { address: { socket_address: { address: pe.endpoint.address, port_value: pe.port } } },
          health_status: pe.endpoint.health,
          load_balancing_weight: { value: pe.endpoint.weight },
        })),
    };
  });
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
