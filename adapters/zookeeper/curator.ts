// Apache Curator x-discovery (Spring Cloud Zookeeper's default): BASE/NAME/ID nodes holding Curator's
// JSON ServiceInstance — `name, id, address, port, sslPort, payload, registrationTimeUTC, serviceType,
// uriSpec, enabled`. Spring Cloud puts `{ metadata: {…} }` in the payload; those become labels.
import { isIP } from 'node:net';
import type { Health } from '../../model/endpoint.js';
import { PROTOCOLS, type Protocol } from '../../model/service.js';
import {
  checkHostname,
  checkPort,
  InvalidNode,
  type InstancePort,
  type ParseResult,
  type ZkInstance,
} from './instance.js';

export const CURATOR_PORT = 'port';
export const CURATOR_SSL_PORT = 'ssl-port';

export interface CuratorContext {
  /** The service name: the NAME node (the path is authoritative, not the JSON's `name`). */
  readonly name: string;
  readonly path: string;
  readonly suffix: string;
}

export function curatorHostname(name: string, suffix: string): string {
  return `${name.toLowerCase()}.${suffix}`;
}

export function parseCuratorInstance(data: string | undefined, ctx: CuratorContext): ParseResult {
  try {
    return parse(data, ctx);
  } catch (err) {
    if (err instanceof InvalidNode) return { kind: 'invalid', reason: err.message };
    throw err;
  }
}

function parse(data: string | undefined, ctx: CuratorContext): ParseResult {
  if (data === undefined || data.trim() === '') throw new InvalidNode('the node has no data');
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch (err) {
    throw new InvalidNode(`not JSON: ${(err as Error).message}`);
  }
  const obj = asObject(json, 'instance');
  if (obj.enabled !== undefined && obj.enabled !== null && typeof obj.enabled !== 'boolean') {
    throw new InvalidNode('enabled: must be true or false');
  }
  if (obj.enabled === false) return { kind: 'disabled' };

  const address = obj.address;
  if (typeof address !== 'string' || address === '') throw new InvalidNode('address: missing');
  // EDS endpoints are IP addresses; Spring Cloud registers the host name unless prefer-ip-address is set.
  if (isIP(address) === 0) {
    throw new InvalidNode(`address: "${address}" is not an IP address (register with prefer-ip-address)`);
  }
  const port = optionalPort(obj.port, 'port');
  const sslPort = optionalPort(obj.sslPort, 'sslPort');
  if (port === undefined && sslPort === undefined) throw new InvalidNode('port and sslPort are both missing');

  const metadata = metadataOf(obj.payload);
  const protocol = protocolOf(metadata.protocol);
  const ports: InstancePort[] = [];
  if (port !== undefined) ports.push({ name: CURATOR_PORT, number: port, protocol });
  // The TLS port of an HTTP service is HTTPS; of anything else (gRPC over TLS, say), opaque TLS.
  const sslProtocol: Protocol = protocol === 'HTTP' || protocol === 'HTTP2' ? 'HTTPS' : 'TLS';
  if (sslPort !== undefined && sslPort !== port)
    ports.push({ name: CURATOR_SSL_PORT, number: sslPort, protocol: sslProtocol });

  const instance: ZkInstance = {
    layout: 'curator',
    path: ctx.path,
    group: ctx.name,
    hostname: checkHostname(curatorHostname(ctx.name, ctx.suffix)),
    address,
    ports,
    labels: metadata,
    serviceLabels: {},
    weight: 1,
    health: healthOf(metadata.instance_status),
  };
  return { kind: 'instance', instance };
}

function optionalPort(value: unknown, field: string): number | undefined {
  return value === undefined || value === null ? undefined : checkPort(value, field);
}

/** `payload.metadata` as labels: strings as they are, numbers and booleans as text, anything else dropped. */
function metadataOf(payload: unknown): Record<string, string> {
  if (payload === undefined || payload === null) return {};
  const metadata = asObject(payload, 'payload').metadata;
  if (metadata === undefined || metadata === null) return {};
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(asObject(metadata, 'payload.metadata'))) {
    if (typeof value === 'string') labels[key] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') labels[key] = String(value);
  }
  return labels;
}

function protocolOf(value: string | undefined): Protocol {
  if (value === undefined || value === '') return 'HTTP';
  const upper = value.toUpperCase();
  if (!(PROTOCOLS as readonly string[]).includes(upper)) {
    throw new InvalidNode(`payload.metadata.protocol: unknown protocol "${value}"`);
  }
  return upper as Protocol;
}

/** Spring Cloud Zookeeper's instance status: only UP (or none) takes traffic; OUT_OF_SERVICE drains. */
function healthOf(status: string | undefined): Health {
  if (status === undefined || status === '' || status === 'UP') return 'HEALTHY';
  return status === 'OUT_OF_SERVICE' ? 'DRAINING' : 'UNHEALTHY';
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidNode(`${what}: must be a JSON object`);
  }
  return value as Record<string, unknown>;
}
