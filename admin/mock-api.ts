// The mock registry's write API:
//   GET    /mock/services                          list services with their endpoints
//   PUT    /mock/services/HOST                     add or replace a service   {ports:[{name,number,protocol}], ...}
//   DELETE /mock/services/HOST                     remove a service and its endpoints
//   PUT    /mock/services/HOST/endpoints           replace all endpoints      [{address, ports?, labels?, ...}]
//   POST   /mock/services/HOST/endpoints           add or replace one endpoint (by address)
//   DELETE /mock/services/HOST/endpoints/ADDRESS   remove one endpoint
import type { IncomingMessage } from 'node:http';
import { InputError, parseMockEndpoint, parseMockService } from '../adapters/mock/input.js';
import type { MockRegistry } from '../adapters/mock/registry.js';

export interface ApiResult {
  readonly status: number;
  readonly body: unknown;
}

const MAX_BODY_BYTES = 1 << 20;

export async function handleMockRequest(
  mock: MockRegistry,
  req: IncomingMessage,
  path: string,
): Promise<ApiResult> {
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent); // ['mock','services',HOST,...]
  if (parts[1] !== 'services') return { status: 404, body: { error: `no such path: ${path}` } };
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
      if (method === 'PUT') {
        mock.putService(parseMockService(host, await readJson(req)));
        return { status: 200, body: mock.snapshot().services.get(host) };
      }
      if (method === 'DELETE') return mock.deleteService(host) ? { status: 204, body: null } : notFound(host);
      return notAllowed(method, path);
    }
    if (parts[3] !== 'endpoints') return { status: 404, body: { error: `no such path: ${path}` } };
    const service = mock.snapshot().services.get(host);
    if (!service) return notFound(host);
    if (parts.length === 4 && method === 'PUT') {
      const body = await readJson(req);
      if (!Array.isArray(body)) throw new InputError('body: must be an array of endpoints');
      mock.setEndpoints(
        host,
        body.map((e) => parseMockEndpoint(e, service)),
      );
      return { status: 200, body: mock.snapshot().endpoints.get(host) ?? [] };
    }
    if (parts.length === 4 && method === 'POST') {
      mock.putEndpoint(host, parseMockEndpoint(await readJson(req), service));
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
    if (err instanceof InputError) return { status: 400, body: { error: err.message } };
    throw err;
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new InputError('body: larger than 1 MiB');
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
