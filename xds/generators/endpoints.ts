// EDS, shared by every kind of proxy: endpoints grouped by locality, each locality weighted by the sum
// of its endpoints' weights (gRPC ignores a locality without a weight, gRFC A27).
import type { ClusterLoadAssignment } from '../generated/envoy/config/endpoint/v3/ClusterLoadAssignment.js';
import type { LocalityLbEndpoints } from '../generated/envoy/config/endpoint/v3/LocalityLbEndpoints.js';
import type { Catalog } from '../../model/catalog.js';
import { localityKey, type PortEndpoint } from '../../model/endpoint.js';
import { parseClusterName } from '../names.js';
import { encodeResource, type EncodedResource } from '../resource.js';
import { ENDPOINT } from '../type-urls.js';

export function buildLoadAssignment(catalog: Catalog, name: string): EncodedResource | undefined {
  const key = parseClusterName(name);
  if (!key || key.direction !== 'outbound' || key.subset !== '') return undefined;
  const service = catalog.service(key.hostname);
  if (!service || service.resolution !== 'STATIC') return undefined;
  const assignment: ClusterLoadAssignment = {
    cluster_name: name,
    endpoints: groupByLocality(catalog.endpoints(key.hostname, key.port)),
  };
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
