// Groups one layout's instances into Services and their Endpoints, by hostname.
//
// Instances of one service normally share their ports. When they do not, the service port is the
// lowest number any instance registers under that port name, its protocol that of the first instance
// (in znode path order), and every instance is an endpoint on its own port. Two port names that land
// on the same number cannot both be service ports: the later one (by number, then name) is dropped
// and its instances' nodes are reported.
import { NO_LOCALITY, type Endpoint } from '../../model/endpoint.js';
import type { Service, ServicePort } from '../../model/service.js';
import type { NodeProblem, ZkInstance } from './instance.js';

export interface AssembledService {
  readonly service: Service;
  readonly endpoints: readonly Endpoint[];
  /** The groups (root children) its instances came from; it lives on, empty, while one exists. */
  readonly groups: ReadonlySet<string>;
  /** What it was built from, in path order, and what building it reported. */
  readonly instances: readonly ZkInstance[];
  readonly problems: readonly NodeProblem[];
}

export interface Assembly {
  readonly services: Map<string, AssembledService>;
  readonly problems: NodeProblem[];
}

/**
 * `previous` is the last assembly of the same layout: a hostname built from the very same instance
 * objects (the parse cache keeps an unchanged node's object) is reused as is, so an unchanged
 * service costs nothing to rebuild, and nothing to compare (the snapshot diff sees the same object).
 */
export function assembleServices(
  instances: readonly ZkInstance[],
  registry: string,
  previous?: ReadonlyMap<string, AssembledService>,
): Assembly {
  const byHost = new Map<string, ZkInstance[]>();
  for (const instance of [...instances].sort((a, b) => compare(a.path, b.path))) {
    const list = byHost.get(instance.hostname) ?? [];
    list.push(instance);
    byHost.set(instance.hostname, list);
  }
  const services = new Map<string, AssembledService>();
  const problems: NodeProblem[] = [];
  for (const [hostname, list] of byHost) {
    const before = previous?.get(hostname);
    if (before && sameInstances(before.instances, list)) {
      services.set(hostname, before);
      problems.push(...before.problems);
      continue;
    }
    const own: NodeProblem[] = [];
    const ports = servicePorts(list, own);
    problems.push(...own);
    const first = list[0];
    if (!first) continue;
    const service: Service = {
      hostname,
      namespace: 'default',
      ports,
      addresses: [],
      resolution: 'STATIC',
      labels: first.serviceLabels,
      registry,
      location: 'MESH_INTERNAL',
    };
    services.set(hostname, {
      service,
      endpoints: endpointsOf(list, ports),
      groups: new Set(list.map((i) => i.group)),
      instances: list,
      problems: own,
    });
  }
  return { services, problems };
}

function sameInstances(a: readonly ZkInstance[], b: readonly ZkInstance[]): boolean {
  return a.length === b.length && a.every((instance, i) => instance === b[i]);
}

function servicePorts(list: readonly ZkInstance[], problems: NodeProblem[]): ServicePort[] {
  const byName = new Map<string, ServicePort>();
  for (const instance of list) {
    for (const p of instance.ports) {
      const seen = byName.get(p.name);
      if (!seen) byName.set(p.name, { name: p.name, number: p.number, protocol: p.protocol });
      else if (p.number < seen.number) byName.set(p.name, { ...seen, number: p.number });
    }
  }
  const ports: ServicePort[] = [];
  const candidates = [...byName.values()].sort((a, b) => a.number - b.number || compare(a.name, b.name));
  for (const port of candidates) {
    const taken = ports.find((p) => p.number === port.number);
    if (!taken) {
      ports.push(port);
      continue;
    }
    for (const instance of list) {
      if (instance.ports.some((p) => p.name === port.name)) {
        problems.push({
          layout: instance.layout,
          path: instance.path,
          reason: `port ${port.number} is already the service's "${taken.name}" port; its "${port.name}" port is not served`,
        });
      }
    }
  }
  return ports;
}

function endpointsOf(list: readonly ZkInstance[], ports: readonly ServicePort[]): Endpoint[] {
  const seen = new Set<string>();
  const endpoints: Endpoint[] = [];
  for (const instance of list) {
    const targets: Record<string, number> = {};
    for (const sp of ports) {
      const p = instance.ports.find((ip) => ip.name === sp.name);
      if (p) targets[sp.name] = p.number;
    }
    if (Object.keys(targets).length === 0) continue;
    // Two registrations of one address and port (a restarted process, say) are one endpoint.
    const key = `${instance.address} ${JSON.stringify(targets)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    endpoints.push({
      address: instance.address,
      ports: targets,
      labels: instance.labels,
      locality: NO_LOCALITY,
      weight: instance.weight,
      health: instance.health,
      serviceAccount: '',
      network: '',
    });
  }
  return endpoints.sort(
    (a, b) => compare(a.address, b.address) || compare(JSON.stringify(a.ports), JSON.stringify(b.ports)),
  );
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
