// The parts of Kubernetes objects the registry reads, projected out of the API server's JSON. Only
// these projections are kept in memory (a Pod is kilobytes; its projection a few strings), and a
// watch event that changes nothing projected changes nothing downstream.
//
// The API server validates what it stores, so a malformed object here means a proxy or stand-in is
// misbehaving: the parsers throw a KubeObjectError naming the field, and the caller keeps the last
// good version of that object.

export class KubeObjectError extends Error {}

export interface ObjectMeta {
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface KubeServicePort {
  /** May be empty only when the Service has a single port. */
  readonly name: string;
  readonly port: number;
  readonly protocol?: string;
  readonly appProtocol?: string;
}

export interface KubeService {
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** ClusterIP, NodePort, LoadBalancer or ExternalName. */
  readonly type: string;
  /** The virtual IPs (`clusterIPs`, else `clusterIP`), without `None`. */
  readonly clusterIPs: readonly string[];
  /** `clusterIP: None`. */
  readonly headless: boolean;
  readonly externalName?: string;
  readonly ports: readonly KubeServicePort[];
}

export interface KubeSlicePort {
  readonly name: string;
  readonly port: number;
}

export interface KubeSliceEndpoint {
  readonly addresses: readonly string[];
  /** Conditions with the API's defaults applied: ready and serving default true, terminating false. */
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  readonly nodeName?: string;
  readonly zone?: string;
  /** The Pod behind the endpoint (`targetRef` of kind Pod). */
  readonly pod?: { readonly namespace: string; readonly name: string };
}

export interface KubeEndpointSlice {
  readonly namespace: string;
  readonly name: string;
  /** The `kubernetes.io/service-name` label: which Service this slice belongs to. */
  readonly serviceName: string;
  /** IPv4, IPv6 or FQDN (deprecated, ignored). */
  readonly addressType: string;
  readonly ports: readonly KubeSlicePort[];
  readonly endpoints: readonly KubeSliceEndpoint[];
}

export interface KubeNode {
  readonly name: string;
  readonly region: string;
  readonly zone: string;
  readonly subzone: string;
}

export interface KubePod {
  readonly namespace: string;
  readonly name: string;
  readonly serviceAccount: string;
  readonly labels: Readonly<Record<string, string>>;
}

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const REGION_LABELS = ['topology.kubernetes.io/region', 'failure-domain.beta.kubernetes.io/region'];
const ZONE_LABELS = ['topology.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/zone'];
const SUBZONE_LABEL = 'topology.istio.io/subzone';

/** `namespace/name`, or `name` for cluster-scoped objects: the key of every store. */
export function objectKey(meta: { namespace: string; name: string }): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

export function parseMeta(raw: unknown): ObjectMeta {
  const metadata = record(record(raw, 'object').metadata, 'metadata');
  return {
    namespace: optionalString(metadata.namespace, 'metadata.namespace') ?? '',
    name: requiredString(metadata.name, 'metadata.name'),
    resourceVersion: optionalString(metadata.resourceVersion, 'metadata.resourceVersion') ?? '',
    labels: stringMap(metadata.labels, 'metadata.labels'),
  };
}

export function parseService(raw: unknown): KubeService {
  const meta = parseMeta(raw);
  const spec = record(record(raw, 'object').spec ?? {}, 'spec');
  const clusterIP = optionalString(spec.clusterIP, 'spec.clusterIP') ?? '';
  const ips = spec.clusterIPs === undefined ? [clusterIP] : stringList(spec.clusterIPs, 'spec.clusterIPs');
  const externalName = optionalString(spec.externalName, 'spec.externalName');
  return {
    namespace: meta.namespace,
    name: meta.name,
    labels: meta.labels,
    type: optionalString(spec.type, 'spec.type') ?? 'ClusterIP',
    clusterIPs: ips.filter((ip) => ip !== '' && ip !== 'None'),
    headless: clusterIP === 'None',
    ...(externalName !== undefined && { externalName }),
    ports: list(spec.ports, 'spec.ports').map((p, i) => servicePort(p, `spec.ports[${i}]`)),
  };
}

function servicePort(raw: unknown, at: string): KubeServicePort {
  const p = record(raw, at);
  const protocol = optionalString(p.protocol, `${at}.protocol`);
  const appProtocol = optionalString(p.appProtocol, `${at}.appProtocol`);
  return {
    name: optionalString(p.name, `${at}.name`) ?? '',
    port: portNumber(p.port, `${at}.port`),
    ...(protocol !== undefined && { protocol }),
    ...(appProtocol !== undefined && { appProtocol }),
  };
}

export function parseEndpointSlice(raw: unknown): KubeEndpointSlice {
  const meta = parseMeta(raw);
  const obj = record(raw, 'object');
  return {
    namespace: meta.namespace,
    name: meta.name,
    serviceName: meta.labels[SERVICE_NAME_LABEL] ?? '',
    addressType: requiredString(obj.addressType, 'addressType'),
    // A port without a number means "all ports" (unused by Services); it cannot be mapped, so skip it.
    ports: list(obj.ports, 'ports').flatMap((p, i) => {
      const port = record(p, `ports[${i}]`);
      if (port.port === undefined || port.port === null) return [];
      return [
        {
          name: optionalString(port.name, `ports[${i}].name`) ?? '',
          port: portNumber(port.port, `ports[${i}].port`),
        },
      ];
    }),
    endpoints: list(obj.endpoints, 'endpoints').map((e, i) => sliceEndpoint(e, `endpoints[${i}]`)),
  };
}

function sliceEndpoint(raw: unknown, at: string): KubeSliceEndpoint {
  const e = record(raw, at);
  const conditions = record(e.conditions ?? {}, `${at}.conditions`);
  const ready = optionalBoolean(conditions.ready, `${at}.conditions.ready`) ?? true;
  const nodeName = optionalString(e.nodeName, `${at}.nodeName`);
  const zone = optionalString(e.zone, `${at}.zone`);
  const target = e.targetRef === undefined || e.targetRef === null ? undefined : record(e.targetRef, at);
  const pod =
    target && target.kind === 'Pod'
      ? {
          namespace: optionalString(target.namespace, `${at}.targetRef.namespace`) ?? '',
          name: requiredString(target.name, `${at}.targetRef.name`),
        }
      : undefined;
  const addresses = stringList(e.addresses, `${at}.addresses`);
  if (addresses.length === 0) throw new KubeObjectError(`${at}.addresses: must not be empty`);
  return {
    addresses,
    ready,
    serving: optionalBoolean(conditions.serving, `${at}.conditions.serving`) ?? true,
    terminating: optionalBoolean(conditions.terminating, `${at}.conditions.terminating`) ?? false,
    ...(nodeName !== undefined && { nodeName }),
    ...(zone !== undefined && { zone }),
    ...(pod && { pod }),
  };
}

export function parseNode(raw: unknown): KubeNode {
  const meta = parseMeta(raw);
  const first = (keys: readonly string[]): string =>
    keys.map((k) => meta.labels[k]).find((v) => v !== undefined) ?? '';
  return {
    name: meta.name,
    region: first(REGION_LABELS),
    zone: first(ZONE_LABELS),
    subzone: meta.labels[SUBZONE_LABEL] ?? '',
  };
}

export function parsePod(raw: unknown): KubePod {
  const meta = parseMeta(raw);
  const spec = record(record(raw, 'object').spec ?? {}, 'spec');
  return {
    namespace: meta.namespace,
    name: meta.name,
    // serviceAccountName defaults to `default` on admission; the deprecated serviceAccount is its alias.
    serviceAccount:
      optionalString(spec.serviceAccountName, 'spec.serviceAccountName') ??
      optionalString(spec.serviceAccount, 'spec.serviceAccount') ??
      '',
    labels: meta.labels,
  };
}

// Field readers: each names the field it rejects.

function record(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new KubeObjectError(`${at}: expected an object`);
  return value as Record<string, unknown>;
}

function list(value: unknown, at: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new KubeObjectError(`${at}: expected a list`);
  return value;
}

function requiredString(value: unknown, at: string): string {
  if (typeof value !== 'string' || value === '')
    throw new KubeObjectError(`${at}: expected a non-empty string`);
  return value;
}

function optionalString(value: unknown, at: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new KubeObjectError(`${at}: expected a string`);
  return value;
}

function optionalBoolean(value: unknown, at: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw new KubeObjectError(`${at}: expected true or false`);
  return value;
}

function stringList(value: unknown, at: string): string[] {
  return list(value, at).map((v, i) => requiredString(v, `${at}[${i}]`));
}

function stringMap(value: unknown, at: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(record(value, at))) {
    if (typeof v !== 'string') throw new KubeObjectError(`${at}.${k}: expected a string`);
    out[k] = v;
  }
  return out;
}

function portNumber(value: unknown, at: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535)
    throw new KubeObjectError(`${at}: expected a port number 1-65535`);
  return value;
}
