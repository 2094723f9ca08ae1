// Consul → Portolan model: one Consul service (every instance `/v1/health/service/NAME` returns)
// becomes one Service and its Endpoints. The rules are documented as a table in
// docs/registry-consul.md; in short:
//   host NAME.DOMAIN · port per distinct ServicePort, protocol from ServiceMeta.protocol (empty: TCP)
//   · address ServiceAddress, else the node's · labels from tags (k=v, k|v) and ServiceMeta
//   · locality datacenter/zone/subzone · weight from Weights · health from the checks
//   · service account from ServiceMeta.service_account, else the service name.
// Every instance serves every port of the service on its own ServicePort (a Consul service is one
// logical service; its port is a per-instance detail, as in Consul's DNS SRV answers).
import { isIP } from 'node:net';
import type { Endpoint, Health, Locality } from '../../model/endpoint.js';
import { PROTOCOLS, type Protocol, type Service, type ServicePort } from '../../model/service.js';
import type { HealthCheck, HealthEntry } from './api.js';

/** ServiceMeta keys with a meaning for Portolan (Consul meta keys allow only [A-Za-z0-9_-]). */
export const META = {
  protocol: 'protocol',
  namespace: 'namespace',
  zone: 'zone',
  subzone: 'subzone',
  serviceAccount: 'service_account',
  network: 'network',
} as const;

export interface ConversionOptions {
  /** Hostnames are `NAME.<domain>`. */
  readonly domain: string;
  /** Whether an instance whose worst check is `warning` still takes traffic. */
  readonly warningHealthy: boolean;
  /** The registry name recorded in Service.registry. */
  readonly registry: string;
  /** Region for nodes whose answer carries no Datacenter. */
  readonly datacenter: string;
}

export interface ConvertedService {
  /** Undefined when no instance is usable (every one lacks an IP address or a port). */
  readonly service: Service | undefined;
  readonly endpoints: readonly Endpoint[];
  /** What was skipped or decided, for /debug/registryz. */
  readonly notes: readonly string[];
}

/** Aggregated state of an instance's checks (node checks included), worst first. */
export type InstanceStatus = 'maintenance' | 'critical' | 'warning' | 'passing';

const STATUS_RANK: Record<InstanceStatus, number> = { passing: 0, warning: 1, critical: 2, maintenance: 3 };

/** `NAME.domain`, lowercased; undefined for a name that cannot be a DNS label. */
export function hostnameFor(name: string, domain: string): string | undefined {
  const label = name.toLowerCase();
  return /^[a-z0-9_-]+$/.test(label) ? `${label}.${domain}` : undefined;
}

export function convertService(
  name: string,
  entries: readonly HealthEntry[],
  options: ConversionOptions,
): ConvertedService {
  const notes: string[] = [];
  const hostname = hostnameFor(name, options.domain);
  if (!hostname) {
    notes.push(`service name "${name}" is not a valid DNS label ([A-Za-z0-9_-]); not served`);
    return { service: undefined, endpoints: [], notes };
  }

  const instances = usableInstances(entries, notes);
  const ports = servicePorts(instances, notes);
  if (ports.length === 0) return { service: undefined, endpoints: [], notes };

  const endpoints = instances.map(({ entry, address, status }) =>
    toEndpoint(name, entry, address, status, ports, options),
  );
  const service: Service = {
    hostname,
    namespace:
      mostCommon(instances.map((i) => i.entry.Service.Meta[META.namespace] ?? 'default')) ?? 'default',
    ports,
    addresses: [],
    resolution: 'STATIC',
    labels: {},
    registry: options.registry,
    location: 'MESH_INTERNAL',
  };
  return { service, endpoints, notes };
}

/** Instances with an IP address and a port, one per address:port (the healthiest), in a stable order. */
function usableInstances(
  entries: readonly HealthEntry[],
  notes: string[],
): { entry: HealthEntry; address: string; status: InstanceStatus }[] {
  const byTarget = new Map<string, { entry: HealthEntry; address: string; status: InstanceStatus }>();
  const sorted = [...entries].sort((a, b) => compare(instanceKey(a), instanceKey(b)));
  for (const entry of sorted) {
    const id = instanceKey(entry);
    const address = entry.Service.Address || entry.Node.Address;
    if (isIP(address) === 0) {
      notes.push(`instance ${id}: address "${address}" is not an IP address; skipped`);
      continue;
    }
    if (entry.Service.Port === 0) {
      notes.push(`instance ${id}: no port; skipped`);
      continue;
    }
    const status = instanceStatus(entry.Service.ID, entry.Checks);
    const target = `${address}:${entry.Service.Port}`;
    const held = byTarget.get(target);
    if (held && STATUS_RANK[held.status] <= STATUS_RANK[status]) {
      notes.push(`instance ${id}: same address and port as ${instanceKey(held.entry)}; skipped`);
      continue;
    }
    if (held) notes.push(`instance ${instanceKey(held.entry)}: same address and port as ${id}; skipped`);
    byTarget.set(target, { entry, address, status });
  }
  return [...byTarget.values()].sort((a, b) => compare(instanceKey(a.entry), instanceKey(b.entry)));
}

/** One service port per distinct ServicePort, ascending; its protocol is its instances' most common. */
function servicePorts(instances: readonly { entry: HealthEntry }[], notes: string[]): ServicePort[] {
  const declared = new Map<number, Protocol[]>();
  for (const { entry } of instances) {
    const { protocol, known } = consulProtocol(entry.Service.Meta[META.protocol]);
    if (!known)
      notes.push(
        `instance ${instanceKey(entry)}: unknown protocol "${entry.Service.Meta[META.protocol]}"; using TCP`,
      );
    declared.set(entry.Service.Port, [...(declared.get(entry.Service.Port) ?? []), protocol]);
  }
  return [...declared.keys()]
    .sort((a, b) => a - b)
    .map((number) => {
      const protocols = declared.get(number) ?? [];
      const protocol = mostCommon(protocols) ?? 'TCP';
      if (new Set(protocols).size > 1)
        notes.push(
          `port ${number}: instances declare ${[...new Set(protocols)].sort().join(', ')}; using ${protocol}`,
        );
      return { name: `${protocol.toLowerCase()}-${number}`, number, protocol };
    });
}

function toEndpoint(
  name: string,
  entry: HealthEntry,
  address: string,
  status: InstanceStatus,
  ports: readonly ServicePort[],
  options: ConversionOptions,
): Endpoint {
  const meta = entry.Service.Meta;
  const weights = entry.Service.Weights;
  return {
    address,
    ports: Object.fromEntries(ports.map((p) => [p.name, entry.Service.Port])),
    labels: labelsOf(entry.Service.Tags, meta),
    locality: localityOf(entry, options.datacenter),
    weight: Math.max(1, status === 'warning' ? weights.Warning : weights.Passing),
    health: endpointHealth(status, weights.Warning, options.warningHealthy),
    serviceAccount: meta[META.serviceAccount] || name,
    network: meta[META.network] ?? '',
  };
}

/** `protocol` meta → Protocol, case-insensitively; empty is TCP (Istio's rule), unknown is TCP too. */
export function consulProtocol(value: string | undefined): { protocol: Protocol; known: boolean } {
  if (!value) return { protocol: 'TCP', known: true };
  const protocol = PROTOCOLS.find((p) => p === value.toUpperCase());
  return protocol ? { protocol, known: true } : { protocol: 'TCP', known: false };
}

/** Tags `key=value` and `key|value` (Istio's form; a bare tag is `tag: ""`), then meta, which wins. */
export function labelsOf(
  tags: readonly string[],
  meta: Readonly<Record<string, string>>,
): Record<string, string> {
  const labels = new Map<string, string>();
  for (const tag of tags) {
    const at = tag.search(/[=|]/);
    if (at === 0) continue; // no key
    if (at < 0) labels.set(tag, '');
    else labels.set(tag.slice(0, at), tag.slice(at + 1));
  }
  for (const [k, v] of Object.entries(meta)) labels.set(k, v);
  // A fixed key order: snapshots are compared as JSON.
  return Object.fromEntries([...labels].sort(([a], [b]) => compare(a, b)));
}

function localityOf(entry: HealthEntry, datacenter: string): Locality {
  const pick = (key: string): string => entry.Service.Meta[key] ?? entry.Node.Meta[key] ?? '';
  return { region: entry.Node.Datacenter || datacenter, zone: pick(META.zone), subzone: pick(META.subzone) };
}

/**
 * The worst of the instance's own checks and its node's checks. Consul implements maintenance mode
 * as a critical check named `_service_maintenance:ID` or `_node_maintenance`.
 */
export function instanceStatus(serviceId: string, checks: readonly HealthCheck[]): InstanceStatus {
  let worst: InstanceStatus = 'passing';
  for (const check of checks) {
    if (check.ServiceID !== '' && check.ServiceID !== serviceId) continue;
    const maintenance =
      check.CheckID === '_node_maintenance' || check.CheckID.startsWith('_service_maintenance:');
    const status: InstanceStatus = maintenance && check.Status === 'critical' ? 'maintenance' : check.Status;
    if (STATUS_RANK[status] > STATUS_RANK[worst]) worst = status;
  }
  return worst;
}

/** passing → HEALTHY; warning → HEALTHY unless configured otherwise or its weight is 0; else UNHEALTHY. */
export function endpointHealth(
  status: InstanceStatus,
  warningWeight: number,
  warningHealthy: boolean,
): Health {
  if (status === 'passing') return 'HEALTHY';
  if (status === 'warning') return warningHealthy && warningWeight > 0 ? 'HEALTHY' : 'UNHEALTHY';
  return 'UNHEALTHY';
}

function instanceKey(entry: HealthEntry): string {
  return `${entry.Node.Node}/${entry.Service.ID}`;
}

/** The most frequent value; ties go to the one that sorts first. */
function mostCommon<T extends string>(values: readonly T[]): T | undefined {
  const counts = new Map<T, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: T | undefined;
  for (const [v, n] of counts) {
    const bestCount = best === undefined ? 0 : (counts.get(best) ?? 0);
    if (n > bestCount || (n === bestCount && best !== undefined && v < best)) best = v;
  }
  return best;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
