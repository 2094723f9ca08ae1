// What a Sidecar's egress lets a proxy be sent, as Istio's SidecarScope has it: clusters for every
// service any egress entry names (all its ports); listeners on a port from the entries with that
// port when there are any, else from the entry without a port.
import type { Service } from '../model/service.js';
import type { SidecarResource } from './types.js';
import { hostMatches, resolveHost } from './hosts.js';

/** Whether a proxy gets outbound listeners and routes for a service's port. */
export type ServiceScope = (service: Service, port: number) => boolean;

export const ALL_SERVICES: ServiceScope = () => true;

/** What a Sidecar lets a proxy be sent. */
export interface ProxyScope {
  /** Clusters (and so endpoints): every port of each service some egress entry names. */
  readonly clusters: (service: Service) => boolean;
  /** Outbound listeners and routes: on a port with its own egress entries those, else the portless entry. */
  readonly listeners: ServiceScope;
}

export const UNSCOPED: ProxyScope = Object.freeze({ clusters: () => true, listeners: ALL_SERVICES });

/** The scope of `sidecar`; no Sidecar, or one without egress, admits everything. */
export function sidecarScope(sidecar: SidecarResource | undefined): ProxyScope {
  const egress = sidecar?.spec.egress;
  if (!sidecar || !egress || egress.length === 0) return UNSCOPED;
  const entries = egress.map((e) => ({
    port: e.port?.number,
    hosts: e.hosts.map((h) => parseEgressHost(h, sidecar.namespace)),
  }));
  const admits = (entry: (typeof entries)[number], service: Service): boolean =>
    entry.hosts.some((h) => h.namespace(service.namespace) && hostMatches(h.host, service.hostname));
  const ports = new Set(entries.flatMap((e) => (e.port === undefined ? [] : [e.port])));
  return {
    clusters: (service) => entries.some((e) => admits(e, service)),
    listeners: (service, port) =>
      entries.some((e) => (ports.has(port) ? e.port === port : e.port === undefined) && admits(e, service)),
  };
}

interface EgressHost {
  readonly namespace: (serviceNamespace: string) => boolean;
  readonly host: string;
}

// `./*`, `*/*`, `istio-system/*`, `ns/fqdn`, `ns/*.suffix`; `~/...` admits nothing.
export function parseEgressHost(text: string, sidecarNamespace: string): EgressHost {
  const slash = text.indexOf('/');
  const ns = text.slice(0, slash);
  const host = text.slice(slash + 1);
  const own = ns === '.' ? sidecarNamespace : ns;
  return {
    namespace: ns === '*' ? () => true : ns === '~' ? () => false : (n) => n === own,
    // A short name is a service in the named namespace (for `*/name`, the Sidecar's own).
    host: resolveHost(host, ns === '*' || ns === '~' ? sidecarNamespace : own),
  };
}
