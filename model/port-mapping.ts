// Endpoints of one definition of a service seen through another definition of it (two registries,
// or two clusters): their target ports re-keyed from one set of port names to the other's.
import type { Endpoint } from './endpoint.js';
import type { Service } from './service.js';

/**
 * Re-keys endpoint ports from `from`'s port names to `to`'s, matching service ports by number. An
 * endpoint serving none of `to`'s ports is dropped.
 */
export function remapEndpointPorts(list: readonly Endpoint[], from: Service, to: Service): Endpoint[] {
  const out: Endpoint[] = [];
  for (const endpoint of list) {
    const ports: Record<string, number> = {};
    for (const fromPort of from.ports) {
      const target = endpoint.ports[fromPort.name];
      const toPort = to.ports.find((p) => p.number === fromPort.number);
      if (target !== undefined && toPort) ports[toPort.name] = target;
    }
    if (Object.keys(ports).length > 0) out.push({ ...endpoint, ports });
  }
  return out;
}
