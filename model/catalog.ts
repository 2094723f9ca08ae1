// The merged, read-only view that everything downstream reads. A Catalog never changes after it is
// built: a change produces a new one, so a push works on one consistent picture.
import type { Endpoint, PortEndpoint } from './endpoint.js';
import { findPort, type Service, type ServicePort } from './service.js';
import { LayeredMap } from './layered-map.js';

/** An endpoint seen from the proxy that runs beside it: which service port it serves, and on which port. */
export interface CoLocatedEndpoint {
  readonly service: Service;
  readonly servicePort: ServicePort;
  readonly endpoint: Endpoint;
  readonly port: number;
}

export interface Catalog {
  services(): readonly Service[];
  service(hostname: string): Service | undefined;
  /** Endpoints of `hostname` that serve its port `port`, with the port each one listens on. */
  endpoints(hostname: string, port: number): readonly PortEndpoint[];
  /** Every service endpoint at one of these IPs: what a proxy on that machine fronts. */
  endpointsByIp(ips: readonly string[]): readonly CoLocatedEndpoint[];
}

export function buildCatalog(
  services: Iterable<Service>,
  endpoints: ReadonlyMap<string, readonly Endpoint[]>,
): UpdatableCatalog {
  const byHost = new Map<string, Service>();
  for (const s of services) byHost.set(s.hostname, s);
  const sorted = [...byHost.values()].sort((a, b) => compareHosts(a.hostname, b.hostname));
  return new MapCatalog(LayeredMap.of(byHost), sorted, LayeredMap.of(new Map(endpoints)));
}

/** What changes for one hostname: its Service (undefined: gone) and its endpoints. */
export interface HostChange {
  readonly service: Service | undefined;
  readonly endpoints: readonly Endpoint[];
}

/** A catalog that can make its successor from the hostnames that changed. */
export interface UpdatableCatalog extends Catalog {
  /**
   * This catalog with `changes` applied. Costs the changed hosts (the maps are layered, see
   * layered-map.ts) plus a copy of the sorted service list when a service changed, not a rebuild;
   * this catalog stays as it was, and unchanged services and endpoint lists are shared with it.
   */
  with(changes: ReadonlyMap<string, HostChange>): UpdatableCatalog;
}

function compareHosts(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

class MapCatalog implements UpdatableCatalog {
  /** Built on first use: only proxies that front services (inbound) ask for it. */
  private byIp: Map<string, CoLocatedEndpoint[]> | undefined;

  constructor(
    private readonly byHost: LayeredMap<string, Service>,
    private readonly sorted: readonly Service[],
    private readonly endpointLists: LayeredMap<string, readonly Endpoint[]>,
  ) {}

  services(): readonly Service[] {
    return this.sorted;
  }

  service(hostname: string): Service | undefined {
    return this.byHost.get(hostname);
  }

  endpoints(hostname: string, portNumber: number): readonly PortEndpoint[] {
    const service = this.byHost.get(hostname);
    const servicePort = service && findPort(service, portNumber);
    if (!servicePort) return [];
    const out: PortEndpoint[] = [];
    for (const endpoint of this.endpointLists.get(hostname) ?? []) {
      const port = endpoint.ports[servicePort.name];
      if (port !== undefined) out.push({ endpoint, port });
    }
    return out;
  }

  endpointsByIp(ips: readonly string[]): readonly CoLocatedEndpoint[] {
    const byIp = (this.byIp ??= this.indexByIp());
    return ips.flatMap((ip) => byIp.get(ip) ?? []);
  }

  with(changes: ReadonlyMap<string, HostChange>): UpdatableCatalog {
    const services: [string, Service | undefined][] = [];
    const lists: [string, readonly Endpoint[] | undefined][] = [];
    // An endpoints-only change keeps the sorted list (the same Service objects) as it is.
    let sorted = this.sorted;
    for (const [hostname, change] of changes) {
      lists.push([hostname, change.service ? change.endpoints : undefined]);
      if (change.service === this.byHost.get(hostname)) continue;
      services.push([hostname, change.service]);
      if (sorted === this.sorted) sorted = [...this.sorted];
      const list = sorted as Service[];
      const at = lowerBound(list, hostname);
      const present = list[at]?.hostname === hostname;
      if (change.service) {
        if (present) list[at] = change.service;
        else list.splice(at, 0, change.service);
      } else if (present) list.splice(at, 1);
    }
    return new MapCatalog(this.byHost.with(services), sorted, this.endpointLists.with(lists));
  }

  private indexByIp(): Map<string, CoLocatedEndpoint[]> {
    const byIp = new Map<string, CoLocatedEndpoint[]>();
    for (const service of this.sorted) {
      for (const endpoint of this.endpointLists.get(service.hostname) ?? []) {
        for (const servicePort of service.ports) {
          const port = endpoint.ports[servicePort.name];
          if (port === undefined) continue;
          const list = byIp.get(endpoint.address) ?? [];
          list.push({ service, servicePort, endpoint, port });
          byIp.set(endpoint.address, list);
        }
      }
    }
    return byIp;
  }
}

/** The first index whose hostname is not below `hostname`. */
function lowerBound(sorted: readonly Service[], hostname: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as Service).hostname < hostname) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
