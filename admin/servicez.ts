// GET /debug/servicez[?q=TEXT]: the merged services as proxies are served them — ports, the registry
// that owns each (and those it shadows), and endpoints grouped by locality with health and the
// registry each came from. At most `limit` services (those whose hostname contains TEXT).
import type { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import { localityKey, type Endpoint } from '../model/endpoint.js';
import type { ServicezEndpoint, ServicezService, ServicezView } from '../model/admin-api.js';

export type { ServicezEndpoint, ServicezService, ServicezView } from '../model/admin-api.js';

export function servicez(discovery: AggregateDiscovery, query = '', limit = 500): ServicezView {
  const all = discovery.catalog().services();
  const q = query.trim().toLowerCase();
  const matched = q ? all.filter((s) => s.hostname.toLowerCase().includes(q)) : all;
  const shadowed = new Map(discovery.conflicts().map((c) => [c.hostname, c.shadowed]));
  const snapshots = discovery.registries.map((r) => ({ name: r.name, snap: r.snapshot() }));
  const services = matched.slice(0, limit).map((s): ServicezService => {
    const localities: Record<string, ServicezEndpoint[]> = {};
    let endpointCount = 0;
    let healthyCount = 0;
    for (const { name, snap } of snapshots) {
      for (const e of snap.endpoints.get(s.hostname) ?? []) {
        const key = localityKey(e.locality);
        (localities[key] ??= []).push(view(e, name));
        endpointCount += 1;
        if (e.health === 'HEALTHY') healthyCount += 1;
      }
    }
    return {
      hostname: s.hostname,
      namespace: s.namespace,
      ports: s.ports,
      resolution: s.resolution,
      location: s.location,
      registry: s.registry,
      shadowed: shadowed.get(s.hostname) ?? [],
      localities,
      endpointCount,
      healthyCount,
    };
  });
  return { total: all.length, matched: matched.length, services };
}

function view(e: Endpoint, registry: string): ServicezEndpoint {
  return {
    address: e.address,
    ports: e.ports,
    health: e.health,
    weight: e.weight,
    labels: e.labels,
    registry,
  };
}
