// The agent's local xDS server: ADS (SotW and delta) in plaintext on a loopback port and a Unix
// socket, for the Envoy and the gRPC apps of this VM; every stream proxied to the control plane
// (sotw-proxy-stream.ts, delta-proxy-stream.ts) over the one upstream connection, and kept serving
// from the node cache while the control plane is unreachable.
import type { Http2Session } from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { listenGrpc, plaintextCredentials, stopGrpc } from '../../ca/grpc-listener.js';
import type { Logger } from '../../log/logger.js';
import { http2StreamOf } from '../../xds/protocol/call-internals.js';
import type { UpstreamConnection } from '../upstream/connection.js';
import { DeltaProxyStream } from './delta-proxy-stream.js';
import {
  LocalStream,
  UPSTREAM_PATH,
  type LocalCall,
  type ProxyDeps,
  type ProxyObserver,
} from './local-stream.js';
import type { AgentIdentity, Api } from './messages.js';
import type { NodeCache } from './node-cache.js';
import { SotwProxyStream } from './sotw-proxy-stream.js';

export interface XdsProxyOptions {
  readonly connection: UpstreamConnection;
  readonly cache: NodeCache;
  readonly identity: AgentIdentity;
  readonly logger: Logger;
  /** Addresses to serve on: `host:port` or `unix:/path`. */
  readonly listen: readonly string[];
  /** Local streams at once, in all (default 256); more are refused with RESOURCE_EXHAUSTED. */
  readonly maxStreams?: number;
  /**
   * Local streams one client (one connection to the agent) may hold at once (default 16); more are
   * refused with RESOURCE_EXHAUSTED, so one client cannot take the others' share.
   */
  readonly maxStreamsPerClient?: number;
  /** A local stream that sends no request this long after it opened is ended (default 10 s). */
  readonly firstRequestTimeoutMs?: number;
  /** The largest request a local client may send (default 4 MiB). */
  readonly maxRequestBytes?: number;
  /** A subscription the control plane has not answered within this is served from the cache (default 3 s). */
  readonly fallbackMs?: number;
  readonly observer?: ProxyObserver;
  /**
   * Checked as each local stream opens: a reason to refuse it (PERMISSION_DENIED), e.g. a workload's
   * socket whose permissions no longer keep other users out (unix-socket.ts `ownedSocketProblem`).
   */
  readonly admit?: () => string | undefined;
}

const identity = (b: Buffer): Buffer => b;
const bidi = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: true,
  responseStream: true,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

export const DEFAULT_MAX_LOCAL_STREAMS = 256;
export const DEFAULT_MAX_STREAMS_PER_CLIENT = 16;

export class XdsProxy {
  private readonly streams = new Set<LocalStream>();
  /** Open streams per local client: its HTTP/2 connection (its peer string where grpc-js hides it). */
  private readonly perClient = new Map<Http2Session | string, number>();
  private readonly server: grpc.Server;
  private readonly deps: ProxyDeps;
  private counter = 0;
  /** Where it listens, with the ports actually bound. */
  readonly addresses: string[] = [];

  constructor(private readonly options: XdsProxyOptions) {
    this.deps = {
      connection: options.connection,
      cache: options.cache,
      identity: options.identity,
      logger: options.logger,
      fallbackMs: options.fallbackMs ?? 3000,
      ...(options.observer && { observer: options.observer }),
    };
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': options.maxRequestBytes ?? 4 * 1024 * 1024,
    });
    this.server.addService(
      {
        StreamAggregatedResources: bidi(UPSTREAM_PATH.sotw),
        DeltaAggregatedResources: bidi(UPSTREAM_PATH.delta),
      },
      {
        StreamAggregatedResources: (call: LocalCall) => this.serve(call, 'sotw'),
        DeltaAggregatedResources: (call: LocalCall) => this.serve(call, 'delta'),
      },
    );
  }

  async start(): Promise<void> {
    for (const address of this.options.listen)
      this.addresses.push(await listenGrpc(this.server, address, plaintextCredentials()));
  }

  /** The open local streams. */
  list(): LocalStream[] {
    return [...this.streams];
  }

  count(api?: Api): number {
    let n = 0;
    for (const s of this.streams) if (!api || s.api === api) n += 1;
    return n;
  }

  async stop(): Promise<void> {
    for (const s of [...this.streams]) s.end(grpc.status.UNAVAILABLE, 'the agent is shutting down');
    await stopGrpc(this.server, 2000);
  }

  private serve(call: LocalCall, api: Api): void {
    const max = this.options.maxStreams ?? DEFAULT_MAX_LOCAL_STREAMS;
    const perClient = this.options.maxStreamsPerClient ?? DEFAULT_MAX_STREAMS_PER_CLIENT;
    const peer = call.getPeer();
    const client = http2StreamOf(call)?.session ?? peer;
    const held = this.perClient.get(client) ?? 0;
    const denied = this.options.admit?.();
    if (denied) {
      this.options.logger.warn({ peer, api }, `local xDS stream refused: ${denied}`);
      call.emit('error', { code: grpc.status.PERMISSION_DENIED, details: denied });
      return;
    }
    const refusal =
      held >= perClient
        ? `this client holds ${held} local xDS streams, the most one client may (--max-local-streams-per-client)`
        : this.streams.size >= max
          ? `the agent serves at most ${max} local xDS streams (--max-local-streams)`
          : undefined;
    if (refusal) {
      this.options.logger.warn(
        { peer, api, held, open: this.streams.size },
        `local xDS stream refused: ${refusal}`,
      );
      call.emit('error', { code: grpc.status.RESOURCE_EXHAUSTED, details: refusal });
      return;
    }
    this.perClient.set(client, held + 1);
    const id = `local-${++this.counter}`;
    const stream =
      api === 'sotw'
        ? new SotwProxyStream(id, api, peer, call, this.deps)
        : new DeltaProxyStream(id, api, peer, call, this.deps);
    this.streams.add(stream);
    // An opened stream that never asks for anything holds a slot: it gets a bounded time to ask.
    const silent = setTimeout(() => {
      if (stream.nodeId === undefined)
        stream.end(
          grpc.status.DEADLINE_EXCEEDED,
          'no request on the stream within the first-request timeout',
        );
    }, this.options.firstRequestTimeoutMs ?? 10_000);
    stream.onClose(() => {
      clearTimeout(silent);
      this.streams.delete(stream);
      const n = (this.perClient.get(client) ?? 1) - 1;
      if (n > 0) this.perClient.set(client, n);
      else this.perClient.delete(client);
    });
    this.options.logger.debug({ stream: id, api, peer }, 'local xDS stream opened');
    call.on('data', (bytes: Buffer) => {
      if (stream.isClosed) return;
      try {
        stream.handle(bytes);
      } catch (err) {
        this.options.logger.error({ err, stream: id }, 'local xDS stream failed');
        stream.end(grpc.status.INTERNAL, (err as Error).message);
      }
    });
    call.on('end', () => {
      stream.close();
      call.end();
    });
    call.on('cancelled', () => stream.close());
    call.on('error', () => stream.close());
  }
}
