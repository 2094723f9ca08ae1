// The merged, read-only view that everything downstream reads. A Catalog never changes after it is
// built: a change produces a new one, so a push works on one consistent picture.
import type { Endpoint, PortEndpoint } from './endpoint.js';
import { findPort, type Service, type ServicePort } from './service.js';

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
): Catalog {
  const byHost = new Map<string, Service>();
  for (const s of services) byHost.set(s.hostname, s);
  const sorted = [...byHost.values()].sort((a, b) =>
    a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0,
  );

  const byIp = new Map<string, CoLocatedEndpoint[]>();
  for (const service of sorted) {
    for (const endpoint of endpoints.get(service.hostname) ?? []) {
      for (const servicePort of service.ports) {
        const port = endpoint.ports[servicePort.name];
        if (port === undefined) continue;
        const list = byIp.get(endpoint.address) ?? [];
        list.push({ service, servicePort, endpoint, port });
        byIp.set(endpoint.address, list);
      }
    }
  }

  return {
    services: () => sorted,
    service: (hostname) => byHost.get(hostname),
    endpoints(hostname, portNumber) {
      const service = byHost.get(hostname);
      const servicePort = service && findPort(service, portNumber);
      if (!servicePort) return [];
      const out: PortEndpoint[] = [];
      for (const endpoint of endpoints.get(hostname) ?? []) {
        const port = endpoint.ports[servicePort.name];
        if (port !== undefined) out.push({ endpoint, port });
      }
      return out;
    },
    endpointsByIp: (ips) => ips.flatMap((ip) => byIp.get(ip) ?? []),
  };
}
