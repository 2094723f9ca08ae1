// The adapter's two blocking reads, made with the `consul` npm package. The package sends `index`
// and `wait`, applies a client-side timeout, and — given a request context with `includeResponse`
// — resolves with the HTTP response next to the body, which is how X-Consul-Index is read. Its
// typings omit these options, so this file declares the call shape it relies on. The package's own
// Watch helper is not used: it treats an index of 0 as an error instead of waiting on 1, has no rate
// limit, and backs off without jitter; BlockingWatch drives the loop instead.
import { EventEmitter } from 'node:events';
import { Agent as HttpsAgent } from 'node:https';
import Consul from 'consul';
import { parseCatalogServices, parseHealthEntries, type CatalogServices, type HealthEntry } from './api.js';
import type { BlockingResult } from './blocking-watch.js';

export interface ConsulClientOptions {
  /** `http://host:port` or `https://host:port`. */
  readonly url: URL;
  readonly token?: string;
  readonly datacenter?: string;
  readonly tls?: { readonly ca?: Buffer; readonly cert?: Buffer; readonly key?: Buffer };
  /** The blocking `wait` sent with every request after the first. */
  readonly waitMs: number;
}

/** What the registry needs from Consul: the service list and one service's instances, blocking. */
export interface ConsulCatalogClient {
  services(index: bigint, signal: AbortSignal): Promise<BlockingResult<CatalogServices>>;
  healthService(name: string, index: bigint, signal: AbortSignal): Promise<BlockingResult<HealthEntry[]>>;
  /** GET /v1/status/leader, the recovery probe: resolves when the cluster has a leader. */
  leader?(signal: AbortSignal): Promise<void>;
  close(): void;
}

/**
 * How long to wait for a blocking answer before calling it a hang: Consul may hold a request for
 * `wait` plus up to wait/16 of jitter; the margin covers transfer time.
 */
export function requestTimeoutMs(waitMs: number): number {
  return Math.ceil(waitMs + waitMs / 16 + Math.max(1000, waitMs / 8));
}

/** The recovery probe's own timeout: /v1/status/leader answers at once when Consul is up. */
const PROBE_TIMEOUT_MS = 2000;

// papi (under `consul`) aborts a request when its context emits `cancel`, and resolves with
// `[response, body]` when the context has `includeResponse`.
class RequestContext extends EventEmitter {
  readonly includeResponse = true;
}

interface CallOptions {
  service?: string;
  index?: string;
  wait?: string;
  timeout: number;
  ctx: RequestContext;
}

interface RawResponse {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

type BlockingCall = (options: CallOptions) => Promise<[RawResponse, unknown]>;

export function createConsulClient(options: ConsulClientOptions): ConsulCatalogClient {
  const secure = options.url.protocol === 'https:';
  const consul = new Consul({
    host: options.url.hostname, // IPv6 stays in brackets: the package builds a URL from it
    port: Number(options.url.port || (secure ? 443 : 80)),
    secure,
    defaults: {
      ...(options.token && { token: options.token }),
      ...(options.datacenter && { dc: options.datacenter }),
    },
    ...(secure && { agent: new HttpsAgent({ keepAlive: true, ...options.tls }) }),
  });
  const listServices = consul.catalog.service.list.bind(consul.catalog.service) as unknown as BlockingCall;
  const healthService = consul.health.service.bind(consul.health) as unknown as BlockingCall;
  const statusLeader = consul.status.leader.bind(consul.status) as unknown as BlockingCall;
  const timeout = requestTimeoutMs(options.waitMs);
  const wait = `${options.waitMs}ms`;

  async function call(
    method: BlockingCall,
    index: bigint,
    signal: AbortSignal,
    extra: { service?: string } = {},
  ) {
    const ctx = new RequestContext();
    const cancel = (): void => void ctx.emit('cancel');
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const [res, body] = await method({
        ...extra,
        ...(index > 0n && { index: index.toString(), wait }),
        timeout,
        ctx,
      });
      return { body, index: consulIndex(res) };
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  return {
    async services(index, signal) {
      const { body, index: next } = await call(listServices, index, signal);
      return { body: parseCatalogServices(body), index: next };
    },
    async healthService(name, index, signal) {
      const { body, index: next } = await call(healthService, index, signal, { service: name });
      return { body: parseHealthEntries(name, body), index: next };
    },
    async leader(signal) {
      // Answered at once; an empty answer is "no cluster leader" (reads fail until one is elected).
      const ctx = new RequestContext();
      const cancel = (): void => void ctx.emit('cancel');
      signal.addEventListener('abort', cancel, { once: true });
      try {
        const [, body] = await statusLeader({ timeout: PROBE_TIMEOUT_MS, ctx });
        if (typeof body !== 'string' || body === '') throw new Error('no cluster leader');
      } finally {
        signal.removeEventListener('abort', cancel);
      }
    },
    close() {
      consul.destroy();
    },
  };
}

function consulIndex(res: RawResponse): bigint {
  const header = res.headers['x-consul-index'];
  const text = Array.isArray(header) ? header[0] : header;
  if (text === undefined || !/^\d+$/.test(text))
    throw new Error(`Consul answered without a valid X-Consul-Index (got ${JSON.stringify(text ?? null)})`);
  return BigInt(text);
}
