// The mock registry's write API:
//   GET    /mock/services                          list services with their endpoints
//   GET    /mock/services/HOST                     one service with its endpoints
//   PUT    /mock/services/HOST                     add or replace a service   {ports:[{name,number,protocol}], ...}
//   DELETE /mock/services/HOST                     remove a service and its endpoints
//   GET    /mock/services/HOST/endpoints           its endpoints
//   PUT    /mock/services/HOST/endpoints           replace all endpoints      [{address, ports?, labels?, ...}]
//   POST   /mock/services/HOST/endpoints           add or replace one endpoint (by address)
//   DELETE /mock/services/HOST/endpoints/ADDRESS   remove one endpoint
//
// Every request must name the admin address in Host and, when it has an Origin, come from it
// (same-origin.ts); writes with a body must be `application/json`. The mock never writes to a
// hostname another registry serves: its endpoints would be merged into that service's.
import type { IncomingMessage } from 'node:http';
import { InputError, parseMockEndpoint, parseMockService } from '../adapters/mock/input.js';
import type { MockRegistry } from '../adapters/mock/registry.js';
import { foreignRequest, isLoopbackHost } from './same-origin.js';

export interface ApiResult {
  readonly status: number;
  readonly body: unknown;
}

/** Who serves a hostname; the aggregate answers it (AggregateDiscovery.registriesServing). */
export interface HostOwners {
  /** The registries whose services include `hostname`, in merge order. */
  registriesServing(hostname: string): readonly string[];
}

export interface MockApi {
  readonly mock: MockRegistry;
  readonly owners: HostOwners;
  /** The admin server's listen host, as given to --http-addr. */
  readonly adminHost: string;
}

const MAX_BODY_BYTES = 1 << 20;

export async function handleMockRequest(
  api: MockApi,
  req: IncomingMessage,
  path: string,
): Promise<ApiResult> {
  const refused = foreignRequest(req, api.adminHost);
  if (refused !== undefined) return { status: 403, body: { error: refused } };
  const parts = decodedSegments(path); // ['mock','services',HOST,...]
  if (!parts) return { status: 400, body: { error: `path: malformed percent-escape in ${path}` } };
  if (parts[1] !== 'services') return { status: 404, body: { error: `no such path: ${path}` } };
  const { mock } = api;
  const host = parts[2];
  const method = req.method ?? 'GET';
  try {
    if (!host) {
      if (method !== 'GET') return notAllowed(method, path);
      const snap = mock.snapshot();
      return {
        status: 200,
        body: [...snap.services.values()].map((s) => ({
          ...s,
          endpoints: snap.endpoints.get(s.hostname) ?? [],
        })),
      };
    }
    if (parts.length === 3) {
      if (method === 'GET') {
        const service = mock.snapshot().services.get(host);
        if (!service) return notFound(host);
        return { status: 200, body: { ...service, endpoints: mock.snapshot().endpoints.get(host) ?? [] } };
      }
      if (method === 'PUT') {
        const service = parseMockService(host, await readJson(req));
        const owned = ownedElsewhere(api, host);
        if (owned) return owned;
        mock.putService(service);
        return { status: 200, body: mock.snapshot().services.get(host) };
      }
      if (method === 'DELETE') return mock.deleteService(host) ? { status: 204, body: null } : notFound(host);
      return notAllowed(method, path);
    }
    if (parts[3] !== 'endpoints') return { status: 404, body: { error: `no such path: ${path}` } };
    const service = mock.snapshot().services.get(host);
    if (!service) return notFound(host);
    if (parts.length === 4 && method === 'GET') {
      return { status: 200, body: mock.snapshot().endpoints.get(host) ?? [] };
    }
    if (parts.length === 4 && method === 'PUT') {
      const body = await readJson(req);
      if (!Array.isArray(body)) throw new InputError('body: must be an array of endpoints');
      const endpoints = body.map((e) => parseMockEndpoint(e, service));
      const owned = ownedElsewhere(api, host);
      if (owned) return owned;
      mock.setEndpoints(host, endpoints);
      return { status: 200, body: mock.snapshot().endpoints.get(host) ?? [] };
    }
    if (parts.length === 4 && method === 'POST') {
      const endpoint = parseMockEndpoint(await readJson(req), service);
      const owned = ownedElsewhere(api, host);
      if (owned) return owned;
      mock.putEndpoint(host, endpoint);
      return { status: 200, body: mock.snapshot().endpoints.get(host) ?? [] };
    }
    if (parts.length === 5 && method === 'DELETE') {
      const address = parts[4] ?? '';
      return mock.deleteEndpoint(host, address)
        ? { status: 204, body: null }
        : { status: 404, body: { error: `no endpoint ${address} in ${host}` } };
    }
    return notAllowed(method, path);
  } catch (err) {
    if (err instanceof InputError) return { status: err.status, body: { error: err.message } };
    throw err;
  }
}

/**
 * The warning `portolan serve` logs when the mock registry is on and the admin API listens beyond
 * loopback: whoever reaches that address can change what every client is sent.
 */
export function mockExposureWarning(registries: readonly string[], adminHost: string): string | undefined {
  if (!registries.includes('mock') || isLoopbackHost(adminHost)) return undefined;
  return `the mock registry is enabled and the admin API listens on ${adminHost}, which is not loopback: anyone who can reach it can change the services every client is sent; use the mock registry on a loopback --http-addr only`;
}

function ownedElsewhere(api: MockApi, host: string): ApiResult | undefined {
  const others = api.owners.registriesServing(host).filter((name) => name !== api.mock.name);
  if (others.length === 0) return undefined;
  return {
    status: 409,
    body: {
      error: `${host} is served by the ${others.join(', ')} registry; the mock registry does not write to a hostname another registry serves`,
    },
  };
}

function decodedSegments(path: string): string[] | undefined {
  try {
    return path.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return undefined; // URIError: a `%` not followed by two hex digits, or invalid UTF-8
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json')
    throw new InputError(
      `content-type: must be application/json, got ${JSON.stringify(req.headers['content-type'] ?? '')}`,
      415,
    );
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new InputError('body: larger than 1 MiB', 413);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch (err) {
    throw new InputError(`body: invalid JSON: ${(err as Error).message}`);
  }
}

function notFound(host: string): ApiResult {
  return { status: 404, body: { error: `no service ${host} in the mock registry` } };
}

function notAllowed(method: string, path: string): ApiResult {
  return { status: 405, body: { error: `${method} not allowed on ${path}` } };
}
