// ServiceEntries (+ the WorkloadEntries they select) → the registry model: one Service per host,
// with the endpoints that serve it.
import type { RegistrySnapshot } from '../model/change.js';
import { parseLocality, type Endpoint, type Health } from '../model/endpoint.js';
import type { Resolution, Service, ServicePort } from '../model/service.js';
import { refOf, type ConfigConflict, type ResourceRef } from './merge.js';
import type {
  ServiceEntryResource,
  ServiceEntrySpec,
  WorkloadEntryResource,
  WorkloadEntrySpec,
} from '../mesh/types.js';
import { addressKind } from './validate/common.js';
import { healthOf } from './validate/workload-entry.js';

export const REGISTRY_NAME = 'config';

/** A problem only visible across resources (a selected WorkloadEntry that does not fit its service). */
export interface CrossResourceWarning {
  readonly resource: ResourceRef;
  readonly message: string;
}

export interface Conversion {
  readonly snapshot: RegistrySnapshot;
  readonly conflicts: readonly ConfigConflict[];
  readonly warnings: readonly CrossResourceWarning[];
}

/** `serviceEntries` in precedence order (file path, then document order): the first claim on a host wins. */
export function buildSnapshot(
  serviceEntries: readonly ServiceEntryResource[],
  workloadEntries: readonly WorkloadEntryResource[],
): Conversion {
  const services = new Map<string, Service>();
  const endpoints = new Map<string, readonly Endpoint[]>();
  const owner = new Map<string, ServiceEntryResource>();
  const conflicts: ConfigConflict[] = [];
  const warnings: CrossResourceWarning[] = [];

  for (const se of serviceEntries) {
    const converted = convertEntry(se, workloadEntries, warnings);
    for (const host of se.spec.hosts) {
      const first = owner.get(host);
      if (first) {
        // Snapshots are keyed by hostname alone, so this holds across namespaces too.
        conflicts.push({ type: 'duplicate-host', subject: host, kept: refOf(first), ignored: refOf(se) });
        continue;
      }
      owner.set(host, se);
      const forHost = converted.hosts.get(host) as ConvertedHost;
      services.set(host, forHost.service);
      endpoints.set(host, forHost.endpoints);
    }
  }
  return { snapshot: { services, endpoints }, conflicts, warnings };
}

interface ConvertedHost {
  readonly service: Service;
  readonly endpoints: readonly Endpoint[];
}

interface ConvertedEntry {
  /** The WorkloadEntries the entry selected, in order (empty without a selector). */
  readonly selected: readonly WorkloadEntryResource[];
  readonly warnings: readonly CrossResourceWarning[];
  readonly hosts: ReadonlyMap<string, ConvertedHost>;
}

// Resources are immutable and a file that did not change keeps its resource objects, so an entry
// (with the same selected WorkloadEntries) converts to the same Service and endpoint objects as
// before: one edit rebuilds what it touched, and the snapshot diff sees the rest as identical.
const converted = new WeakMap<ServiceEntryResource, ConvertedEntry>();

function convertEntry(
  se: ServiceEntryResource,
  workloadEntries: readonly WorkloadEntryResource[],
  warnings: CrossResourceWarning[],
): ConvertedEntry {
  const selector = se.spec.workloadSelector?.labels;
  const selected =
    !se.spec.endpoints && selector
      ? workloadEntries
          .filter((we) => we.namespace === se.namespace && matches(selector, we.spec.labels ?? {}))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      : [];
  const cached = converted.get(se);
  if (cached && sameList(cached.selected, selected)) {
    warnings.push(...cached.warnings);
    return cached;
  }
  const own: CrossResourceWarning[] = [];
  const ports = servicePorts(se.spec);
  const shared = sharedEndpoints(se, selected, own);
  const hosts = new Map<string, ConvertedHost>();
  for (const host of se.spec.hosts) {
    hosts.set(host, {
      service: toService(se, host, ports),
      endpoints: shared ?? [toEndpoint({ address: host }, se.spec, 'HEALTHY')],
    });
  }
  const entry = { selected, warnings: own, hosts };
  converted.set(se, entry);
  warnings.push(...own);
  return entry;
}

function sameList<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function servicePorts(spec: ServiceEntrySpec): ServicePort[] {
  return spec.ports.map((p) => ({ name: p.name, number: p.number, protocol: p.protocol ?? 'TCP' }));
}

function toService(se: ServiceEntryResource, hostname: string, ports: readonly ServicePort[]): Service {
  return {
    hostname,
    namespace: se.namespace,
    ports,
    addresses: se.spec.addresses ?? [],
    resolution: modelResolution(se.spec),
    labels: se.labels,
    registry: REGISTRY_NAME,
    location: se.spec.location ?? 'MESH_EXTERNAL',
  };
}

// The model has no round-robin flavour of DNS; the ServiceEntry in /debug/configz still shows it.
function modelResolution(spec: ServiceEntrySpec): Resolution {
  const r = spec.resolution ?? 'NONE';
  return r === 'DNS_ROUND_ROBIN' ? 'DNS' : r;
}

/**
 * Endpoints common to all hosts of the entry, or undefined when the hosts resolve themselves
 * (DNS without endpoints or selector: Istio then uses each host name as its own DNS endpoint).
 */
function sharedEndpoints(
  se: ServiceEntryResource,
  selected: readonly WorkloadEntryResource[],
  warnings: CrossResourceWarning[],
): Endpoint[] | undefined {
  const { spec } = se;
  if (spec.endpoints) return spec.endpoints.map((e) => toEndpoint(e, spec, 'HEALTHY'));
  if (spec.workloadSelector?.labels) {
    return selected
      .filter((we) => fitsResolution(se, we, warnings))
      .map((we) => toEndpoint(we.spec, spec, healthOf(we.annotations) ?? 'HEALTHY'));
  }
  const resolution = modelResolution(spec);
  return resolution === 'DNS' ? undefined : [];
}

/** A ServiceEntry's selector without labels selects nothing, as Istio's labels.Instance.Match. */
export function matches(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
): boolean {
  const wanted = Object.entries(selector);
  return wanted.length > 0 && wanted.every(([k, v]) => labels[k] === v);
}

// Inline endpoints were checked against the resolution during validation; selected ones can only be
// checked here, and one that does not fit is left out rather than failing the ServiceEntry.
function fitsResolution(
  se: ServiceEntryResource,
  we: WorkloadEntryResource,
  warnings: CrossResourceWarning[],
): boolean {
  const kind = addressKind(we.spec.address);
  const resolution = se.spec.resolution ?? 'NONE';
  let problem: string | undefined;
  if (resolution === 'STATIC' && kind === 'dns')
    problem = 'has a DNS name as address but resolution is STATIC';
  else if (resolution !== 'STATIC' && kind === 'unix')
    problem = `has a unix:// address but resolution is ${resolution}`;
  else if (kind === 'unix' && se.spec.ports.length !== 1)
    problem = 'has a unix:// address but the service has several ports';
  if (problem === undefined) return true;
  warnings.push({
    resource: refOf(we),
    message: `selected by ${refOf(se).resource} but ${problem}; endpoint skipped`,
  });
  return false;
}

function toEndpoint(entry: WorkloadEntrySpec, spec: ServiceEntrySpec, health: Health): Endpoint {
  return {
    address: entry.address,
    ports: targetPorts(spec, entry.ports ?? {}),
    labels: entry.labels ?? {},
    locality: parseLocality(entry.locality),
    weight: entry.weight || 1, // proto3: 0 is "unset"
    health,
    serviceAccount: entry.serviceAccount ?? '',
    network: entry.network ?? '',
  };
}

/** Per service port: the entry's own port for that name, else the port's targetPort, else its number. */
function targetPorts(
  spec: ServiceEntrySpec,
  entryPorts: Readonly<Record<string, number>>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of spec.ports) out[p.name] = entryPorts[p.name] ?? p.targetPort ?? p.number;
  return out;
}
