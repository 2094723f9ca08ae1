// Validates the JSON bodies of the mock registry's admin API into model objects, with defaults, so a
// bad request gets a 400 naming the field instead of corrupting the registry.
import { isIP } from 'node:net';
import { parseLocality, type Endpoint } from '../../model/endpoint.js';
import { PROTOCOLS, type Protocol, type Service, type ServicePort } from '../../model/service.js';

/** A request the mock registry refuses; `status` is the HTTP status the admin API answers with. */
export class InputError extends Error {
  constructor(
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;

export function parseMockService(hostname: string, body: unknown): Omit<Service, 'registry'> {
  if (!isDnsName(hostname))
    throw new InputError(
      `hostname: must be a DNS name (dot-separated labels of letters, digits and -, at most 253 characters), got ${JSON.stringify(hostname)}`,
    );
  const obj = asObject(body, 'body');
  const ports = asArray(obj.ports ?? [], 'ports').map((p, i) => parsePort(p, `ports[${i}]`));
  if (ports.length === 0) throw new InputError('ports: at least one port is required');
  const resolution = obj.resolution ?? 'STATIC';
  if (resolution !== 'STATIC' && resolution !== 'DNS' && resolution !== 'NONE') {
    throw new InputError('resolution: must be STATIC, DNS or NONE');
  }
  const location = obj.location ?? 'MESH_INTERNAL';
  if (location !== 'MESH_INTERNAL' && location !== 'MESH_EXTERNAL') {
    throw new InputError('location: must be MESH_INTERNAL or MESH_EXTERNAL');
  }
  return {
    hostname,
    namespace: optString(obj.namespace, 'namespace') ?? 'default',
    ports,
    addresses: asArray(obj.addresses ?? [], 'addresses').map((a, i) => asIpOrCidr(a, `addresses[${i}]`)),
    resolution,
    labels: stringMap(obj.labels, 'labels'),
    location,
  };
}

export function parseMockEndpoint(body: unknown, service: Service | undefined): Endpoint {
  const obj = asObject(body, 'body');
  const address = asString(obj.address, 'address');
  // Served as is in EDS, where one bad address makes a client reject the whole assignment.
  if (isIP(address) === 0)
    throw new InputError(`address: must be an IP address, got ${JSON.stringify(address)}`);
  const ports: Record<string, number> = {};
  for (const [name, value] of Object.entries(asObject(obj.ports ?? {}, 'ports'))) {
    ports[name] = asPortNumber(value, `ports.${name}`);
  }
  // Like a ServiceEntry endpoint: a service port the body does not map is served on its own number.
  for (const p of service?.ports ?? []) ports[p.name] ??= p.number;
  const health = obj.health ?? 'HEALTHY';
  if (health !== 'HEALTHY' && health !== 'UNHEALTHY' && health !== 'DRAINING') {
    throw new InputError('health: must be HEALTHY, UNHEALTHY or DRAINING');
  }
  const weight = obj.weight ?? 1;
  if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 1) {
    throw new InputError('weight: must be an integer >= 1');
  }
  return {
    address,
    ports,
    labels: stringMap(obj.labels, 'labels'),
    locality: parseLocality(optString(obj.locality, 'locality')),
    weight,
    health,
    serviceAccount: optString(obj.serviceAccount, 'serviceAccount') ?? '',
    network: optString(obj.network, 'network') ?? '',
  };
}

function parsePort(value: unknown, path: string): ServicePort {
  const obj = asObject(value, path);
  const number = asPortNumber(obj.number, `${path}.number`);
  const protocol = (optString(obj.protocol, `${path}.protocol`) ?? 'TCP').toUpperCase();
  if (!PROTOCOLS.includes(protocol as Protocol))
    throw new InputError(`${path}.protocol: unknown protocol ${protocol}`);
  return {
    name: optString(obj.name, `${path}.name`) ?? `port-${number}`,
    number,
    protocol: protocol as Protocol,
  };
}

const DNS_LABEL = /^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$/;

function isDnsName(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split('.').every((label) => DNS_LABEL.test(label));
}

function asIpOrCidr(value: unknown, path: string): string {
  const s = asString(value, path);
  const [ip = '', prefix, ...rest] = s.split('/');
  const family = isIP(ip);
  const max = family === 4 ? 32 : 128;
  const ok =
    family !== 0 &&
    rest.length === 0 &&
    (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= max));
  if (!ok) throw new InputError(`${path}: must be an IP address or CIDR, got ${JSON.stringify(s)}`);
  return s;
}

function asPortNumber(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    throw new InputError(`${path}: must be an integer in 1..65535`);
  }
  return value;
}

function asObject(value: unknown, path: string): Json {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new InputError(`${path}: must be an object`);
  return value as Json;
}

function asArray(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw new InputError(`${path}: must be an array`);
  return value;
}

function asString(value: unknown, path: string): string {
  if (typeof value !== 'string' || value === '') throw new InputError(`${path}: must be a non-empty string`);
  return value;
}

function optString(value: unknown, path: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InputError(`${path}: must be a string`);
  return value;
}

function stringMap(value: unknown, path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(asObject(value ?? {}, path))) out[k] = asString(v, `${path}.${k}`);
  return out;
}
