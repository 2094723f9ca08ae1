// The two Consul HTTP API answers the adapter reads, typed to the fields it uses, and checked at run
// time: a malformed answer is an error (the last good state stays), never a smaller catalog.
//   GET /v1/catalog/services          → { "web": ["tag", ...], ... }
//   GET /v1/health/service/NAME       → [{ Node, Service, Checks }, ...]

/** `/v1/catalog/services`: service name → the union of its instances' tags. */
export type CatalogServices = ReadonlyMap<string, readonly string[]>;

export type CheckStatus = 'passing' | 'warning' | 'critical';

export interface HealthCheck {
  readonly CheckID: string;
  readonly Status: CheckStatus;
  /** Empty for a node-level check (it applies to every service on the node). */
  readonly ServiceID: string;
}

export interface HealthNode {
  readonly Node: string;
  readonly Address: string;
  readonly Datacenter: string;
  readonly Meta: Readonly<Record<string, string>>;
}

export interface HealthService {
  readonly ID: string;
  readonly Service: string;
  readonly Tags: readonly string[];
  /** Empty means the node's address. */
  readonly Address: string;
  readonly Meta: Readonly<Record<string, string>>;
  readonly Port: number;
  readonly Weights: { readonly Passing: number; readonly Warning: number };
}

/** One instance of a service, as `/v1/health/service/NAME` returns it. */
export interface HealthEntry {
  readonly Node: HealthNode;
  readonly Service: HealthService;
  readonly Checks: readonly HealthCheck[];
}

export class MalformedAnswerError extends Error {}

export function parseCatalogServices(body: unknown): CatalogServices {
  // Consul answers an empty catalog with `{}`; papi leaves an empty body undefined.
  if (body === undefined) return new Map();
  if (!isObject(body)) throw new MalformedAnswerError('catalog/services: expected a JSON object');
  const out = new Map<string, readonly string[]>();
  for (const [name, tags] of Object.entries(body)) {
    if (tags !== null && !isStringArray(tags))
      throw new MalformedAnswerError(`catalog/services: tags of "${name}" are not a list of strings`);
    out.set(name, tags ?? []);
  }
  return out;
}

export function parseHealthEntries(service: string, body: unknown): HealthEntry[] {
  if (body === undefined) return [];
  if (!Array.isArray(body))
    throw new MalformedAnswerError(`health/service/${service}: expected a JSON array`);
  return body.map((raw: unknown, i) => {
    const where = `health/service/${service}[${i}]`;
    if (!isObject(raw) || !isObject(raw.Node) || !isObject(raw.Service) || !Array.isArray(raw.Checks))
      throw new MalformedAnswerError(`${where}: expected an object with Node, Service and Checks`);
    return {
      Node: parseNode(raw.Node, where),
      Service: parseService(raw.Service, where),
      Checks: raw.Checks.map((c: unknown) => parseCheck(c, where)),
    };
  });
}

function parseNode(raw: Record<string, unknown>, where: string): HealthNode {
  return {
    Node: requireString(raw.Node, `${where}.Node.Node`),
    Address: requireString(raw.Address, `${where}.Node.Address`),
    Datacenter: optString(raw.Datacenter, `${where}.Node.Datacenter`),
    Meta: stringMap(raw.Meta, `${where}.Node.Meta`),
  };
}

function parseService(raw: Record<string, unknown>, where: string): HealthService {
  const port = raw.Port ?? 0;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new MalformedAnswerError(`${where}.Service.Port: expected a port number`);
  const weights = isObject(raw.Weights) ? raw.Weights : {};
  return {
    ID: requireString(raw.ID, `${where}.Service.ID`),
    Service: requireString(raw.Service, `${where}.Service.Service`),
    Tags: raw.Tags == null ? [] : requireStringArray(raw.Tags, `${where}.Service.Tags`),
    Address: optString(raw.Address, `${where}.Service.Address`),
    Meta: stringMap(raw.Meta, `${where}.Service.Meta`),
    Port: port,
    // Consul's defaults when a registration gives no weights.
    Weights: {
      Passing: weight(weights.Passing, 1, `${where}.Service.Weights.Passing`),
      Warning: weight(weights.Warning, 1, `${where}.Service.Weights.Warning`),
    },
  };
}

function parseCheck(raw: unknown, where: string): HealthCheck {
  if (!isObject(raw)) throw new MalformedAnswerError(`${where}.Checks: expected objects`);
  const status = raw.Status;
  if (status !== 'passing' && status !== 'warning' && status !== 'critical')
    throw new MalformedAnswerError(`${where}.Checks: unknown status ${JSON.stringify(status)}`);
  return {
    CheckID: requireString(raw.CheckID, `${where}.Checks.CheckID`),
    Status: status,
    ServiceID: optString(raw.ServiceID, `${where}.Checks.ServiceID`),
  };
}

function weight(value: unknown, fallback: number, where: string): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw new MalformedAnswerError(`${where}: expected a non-negative integer`);
  return value;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string');
}

function requireString(v: unknown, where: string): string {
  if (typeof v !== 'string') throw new MalformedAnswerError(`${where}: expected a string`);
  return v;
}

function optString(v: unknown, where: string): string {
  return v === undefined || v === null ? '' : requireString(v, where);
}

function requireStringArray(v: unknown, where: string): string[] {
  if (!isStringArray(v)) throw new MalformedAnswerError(`${where}: expected a list of strings`);
  return v;
}

function stringMap(v: unknown, where: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) throw new MalformedAnswerError(`${where}: expected an object`);
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(v)) out[k] = requireString(value, `${where}.${k}`);
  return out;
}
