// Sidecar scoping, as Istio selects and reads it: the Sidecar in the proxy's namespace whose
// workloadSelector matches the proxy's labels, else the namespace's Sidecar without a selector,
// else the root namespace's Sidecar without a selector; first in config order within each tier
// (Istio: the oldest). Its egress hosts (`namespace/host`) decide which services the proxy is sent.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { SidecarResource } from '../../mesh/types.js';
import type { Service } from '../../model/service.js';
import { hostMatches, resolveHost } from '../../mesh/hosts.js';
import { ROOT_NAMESPACE } from './destination-rules.js';

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

export function sidecarFor(
  config: MeshConfig,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): SidecarResource | undefined {
  const own = config.sidecars.filter((s) => s.namespace === namespace);
  return (
    own.find((s) => s.spec.workloadSelector && selects(s.spec.workloadSelector.labels, labels)) ??
    own.find((s) => !s.spec.workloadSelector) ??
    config.sidecars.find((s) => s.namespace === ROOT_NAMESPACE && !s.spec.workloadSelector)
  );
}

function selects(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/**
 * What a proxy may be sent, as Istio's SidecarScope has it: clusters for every service any egress
 * entry names (all its ports); listeners on a port from the entries with that port when there are
 * any, else from the entry without a port. No Sidecar, or one without egress, admits everything.
 */
export function scopeFor(
  config: MeshConfig,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): ProxyScope {
  // Asked once per cluster, listener and route built: computed once per config and view.
  let byView = scopeMemo.get(config);
  if (!byView) scopeMemo.set(config, (byView = new Map<string, ProxyScope>()));
  const key = JSON.stringify([namespace, labels]);
  let scope = byView.get(key);
  if (!scope) byView.set(key, (scope = buildScope(config, namespace, labels)));
  return scope;
}

const scopeMemo = new WeakMap<MeshConfig, Map<string, ProxyScope>>();

function buildScope(
  config: MeshConfig,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): ProxyScope {
  const sidecar = sidecarFor(config, namespace, labels);
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

/** The outbound policy the Sidecar sets, if it does. */
export function sidecarOutboundPolicy(
  config: MeshConfig,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): 'ALLOW_ANY' | 'REGISTRY_ONLY' | undefined {
  return sidecarFor(config, namespace, labels)?.spec.outboundTrafficPolicy?.mode;
}
