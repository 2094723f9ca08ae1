// Resolves the `HOST[:PORT]` name a proxyless gRPC client asks for to a service port.
import type { Catalog } from '../../../model/catalog.js';
import { findPort, type Service, type ServicePort } from '../../../model/service.js';
import { parseHostPort } from '../names.js';

export interface ResolvedServicePort {
  readonly service: Service;
  readonly port: ServicePort;
}

/** `xds:///HOST` (no port) resolves only when the service has exactly one port. */
export function resolveServicePort(catalog: Catalog, name: string): ResolvedServicePort | undefined {
  const hp = parseHostPort(name);
  if (!hp) return undefined;
  const service = catalog.service(hp.hostname);
  if (!service) return undefined;
  const port =
    hp.port === undefined
      ? service.ports.length === 1
        ? service.ports[0]
        : undefined
      : findPort(service, hp.port);
  return port && { service, port };
}

/** Every `HOST:PORT` the catalog offers, for wildcard listener subscriptions. */
export function allHostPorts(catalog: Catalog): string[] {
  return catalog.services().flatMap((s) => s.ports.map((p) => `${s.hostname}:${p.number}`));
}
