// The agent's local xDS server: ADS (SotW and delta) in plaintext on a loopback port and a Unix
// socket, for the Envoy and the gRPC apps of this VM; every stream proxied to the control plane
// (sotw-proxy-stream.ts, delta-proxy-stream.ts) over the one upstream connection, and kept serving
// from the node cache while the control plane is unreachable.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log/logger.js';
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
  /** Local streams at once (default 1024); more are refused with RESOURCE_EXHAUSTED. */
  readonly maxStreams?: number;
  /** The largest request a local client may send (default 4 MiB). */
  readonly maxRequestBytes?: number;
  /** A subscription the control plane has not answered within this is served from the cache (default 3 s). */
  readonly fallbackMs?: number;
  readonly observer?: ProxyObserver;
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

export class XdsProxy {
  private readonly streams = new Set<LocalStream>();
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
    for (const address of this.options.listen) {
      const port = await new Promise<number>((resolve, reject) =>
        this.server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, p) =>
          err ? reject(new Error(`cannot listen on ${address}: ${err.message}`)) : resolve(p),
        ),
      );
      this.addresses.push(address.startsWith('unix:') ? address : address.replace(/:\d+$/, `:${port}`));
    }
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
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, 2000);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private serve(call: LocalCall, api: Api): void {
    const max = this.options.maxStreams ?? 1024;
    if (this.streams.size >= max) {
      call.emit('error', {
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: `the agent serves at most ${max} local xDS streams (--max-local-streams)`,
      });
      return;
    }
    const id = `local-${++this.counter}`;
    const peer = call.getPeer();
    const stream =
      api === 'sotw'
        ? new SotwProxyStream(id, api, peer, call, this.deps)
        : new DeltaProxyStream(id, api, peer, call, this.deps);
    this.streams.add(stream);
    stream.onClose(() => this.streams.delete(stream));
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
