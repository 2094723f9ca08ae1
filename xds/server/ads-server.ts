// The ADS server, assembled from pieces with one job each: the gRPC service and each stream's
// request loop (ads-service.ts), the open streams and their subscriptions (stream-registry.ts), the
// push loop from changes to the streams (push-loop.ts), server-wide flow control (flow-control.ts),
// and the streams themselves (sotw-connection.ts, delta-connection.ts). What it serves comes from
// the generator table it is given; what happens is reported to the observer it is given.
import type * as grpc from '@grpc/grpc-js';
import type { Http2Session } from 'node:http2';
import { NO_MESH_CONFIG, type MeshConfigSource } from '../../mesh/mesh-config.js';
import { everythingChanged, type ChangeTrigger } from '../../model/change.js';
import type { ServiceDiscovery } from '../../model/discovery.js';
import type { Logger } from '../../log/logger.js';
import type { GeneratorLookup } from '../generators/generator.js';
import type { AdsApi, AdsStream, StreamCall, StreamDeps } from './ads-stream.js';
import {
  AdsService,
  type AdsAuthorizer,
  type PeerAuthenticator,
  type StreamSelector,
  type StreamAdmission,
} from './ads-service.js';
import { DeltaConnection } from './delta-connection.js';
import { DEFAULT_FLOW_CONTROL, PushLimiter, type FlowControlOptions } from './flow-control.js';
import { sentOrigins, type SentOrigin } from './nack-origins.js';
import type { AdsObserver, StreamView } from './observer.js';
import { DEFAULT_DEBOUNCE } from './push-debouncer.js';
import { PushLoop, type PushCheck, type PushedGenerations } from './push-loop.js';
import type { ViewCount } from './resource-cache.js';
import { ResponseCache } from './response-cache.js';
import { SotwConnection } from './sotw-connection.js';
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from './stream-limits.js';
import { StreamRegistry, type StreamCount } from './stream-registry.js';
import {
  DEFAULT_TRANSPORT_LIMITS,
  grpcServerOptions,
  PingPolicy,
  type TransportLimits,
} from './transport-limits.js';

export type { AdsAuthorizer, PeerAuthenticator, StreamAdmission, StreamSelector } from './ads-service.js';

export interface AdsServerOptions {
  readonly discovery: ServiceDiscovery;
  /** The traffic config (the config directory); a change to it is a full push. */
  readonly meshConfig?: MeshConfigSource;
  readonly logger: Logger;
  /** Which generator serves each type URL to each kind of proxy (xds/generators/index.ts). */
  readonly generators: GeneratorLookup;
  /** Runs after every push (the PORTOLAN_VALIDATE_PUSHES consistency check); none by default. */
  readonly checkPush?: PushCheck;
  /** The config generation in force at the config directory (its registry's), for the first view. */
  readonly configGeneration?: () => number;
  /** Hears about streams, requests, responses, NACKs and pushes (metrics, the proxy history). */
  readonly observer?: AdsObserver;
  /** Quiet period: a push goes out after this long without a new change (default 100 ms). */
  readonly pushWindowMs?: number;
  /** No change waits longer than this for its push (default 10 s). */
  readonly maxPushDelayMs?: number;
  readonly flowControl?: Partial<FlowControlOptions>;
  /** The SPIFFE trust domain, for the peer identities TLS contexts match. */
  readonly trustDomain?: string;
  /** Checks each stream once its node (and peer identity) is known; a refusal ends it. */
  readonly admission?: StreamAdmission;
  /** What one client may hold: names per type, streams per peer, the first request's deadline. */
  readonly limits?: Partial<StreamLimits>;
  /** The connection limits of the ports ADS is served on (serverOptions; the ping policy). */
  readonly transport?: Partial<TransportLimits>;
}

/** Live numbers of the server, read on demand (metrics gauges). */
export interface AdsGauges {
  readonly streams: () => readonly StreamCount[];
  /** Streams waiting for a push slot or a new-stream token. */
  readonly queued: () => number;
  /** Responses written and not yet drained. */
  readonly inFlight: () => number;
  /** New streams admitted per second now (the guaranteed rate plus what the load allows). */
  readonly admissionRate: () => number;
  /** Encoded resources in the shared cache. */
  readonly cachedResources: () => number;
  /** Views (distinct view keys) open streams hold in the shared cache, per kind and type. */
  readonly cachedViews: () => readonly ViewCount[];
}

export class AdsServer {
  private readonly streams = new StreamRegistry();
  private readonly limiter: PushLimiter;
  private readonly loop: PushLoop;
  private readonly service: AdsService;
  private readonly unsubscribe: (() => void)[];
  private readonly observer: AdsObserver;
  private readonly responses = new ResponseCache();
  private readonly generators: GeneratorLookup;
  readonly gauges: AdsGauges;
  /** The limits in force. */
  readonly limits: StreamLimits;
  readonly transport: TransportLimits;

  constructor(options: AdsServerOptions) {
    const observer = (this.observer = options.observer ?? {});
    this.generators = options.generators;
    const meshConfig = options.meshConfig ?? NO_MESH_CONFIG;
    this.limiter = new PushLimiter({ ...DEFAULT_FLOW_CONTROL, ...options.flowControl });
    this.loop = new PushLoop({
      discovery: options.discovery,
      meshConfig,
      ...(options.trustDomain && { trustDomain: options.trustDomain }),
      debounce: {
        quietMs: options.pushWindowMs ?? DEFAULT_DEBOUNCE.quietMs,
        maxDelayMs: options.maxPushDelayMs ?? DEFAULT_DEBOUNCE.maxDelayMs,
      },
      limiter: this.limiter,
      streams: this.streams,
      observer,
      ...(options.checkPush && { checkPush: options.checkPush }),
      ...(options.configGeneration && { configGeneration: options.configGeneration }),
    });
    this.limits = { ...DEFAULT_STREAM_LIMITS, ...options.limits };
    this.transport = { ...DEFAULT_TRANSPORT_LIMITS, ...options.transport };
    const deps: StreamDeps = {
      generators: options.generators,
      cache: this.loop.cache,
      responses: this.responses,
      limiter: this.limiter,
      subscriptions: this.streams.subscriptions,
      observer,
      logger: options.logger,
      limits: this.limits,
      configGeneration: this.loop.generation,
    };
    const pingLog = options.logger;
    const pings = new PingPolicy(this.transport, (session: Http2Session) =>
      pingLog.warn(
        { peer: `${session.socket?.remoteAddress ?? '?'}:${session.socket?.remotePort ?? '?'}` },
        'closing a connection that pings too often (too_many_pings)',
      ),
    );
    const variants: Record<AdsApi, (id: string, peer: string, call: StreamCall) => AdsStream> = {
      sotw: (id, peer, call) => new SotwConnection(id, peer, deps, call),
      delta: (id, peer, call) => new DeltaConnection(id, peer, deps, call),
    };
    this.service = new AdsService({
      ready: () => options.discovery.hasSynced(),
      streams: this.streams,
      open: (api, id, peer, call) => variants[api](id, peer, call),
      observer,
      ...(options.admission && { admission: options.admission }),
      logger: options.logger,
      limits: this.limits,
      pings,
      maxReceiveMessageBytes: this.transport.maxReceiveMessageBytes,
    });
    this.unsubscribe = [
      options.discovery.onChange((e) => {
        observer.modelChanged?.(e);
        this.loop.add(e);
      }),
    ];
    this.gauges = {
      streams: () => this.streams.counts(),
      queued: () => this.limiter.queued,
      inFlight: () => this.limiter.inFlight,
      admissionRate: () => this.limiter.admissionRate,
      cachedResources: () => this.loop.cache.size,
      cachedViews: () => this.loop.cache.viewCounts(),
    };
  }

  /** How far pushes have come with the config generations (GET /debug/waitz). */
  pushedGenerations(): PushedGenerations {
    return this.loop.generations();
  }

  /** Pushes so far (one per debounced batch). */
  get pushes(): number {
    return this.loop.pushes;
  }

  /** The grpc-js server options of a port that serves ADS: request size, HTTP/2 limits, keepalive. */
  get serverOptions(): grpc.ServerOptions {
    return grpcServerOptions(this.transport);
  }

  /**
   * Serves ADS on `server` (made with `serverOptions`). With `authenticate`, a stream whose peer is
   * not authenticated is refused as it opens, and streams are counted per identity; with
   * `authorize`, each stream's first node is checked before anything is sent.
   */
  register(server: grpc.Server, authorize?: AdsAuthorizer, authenticate?: PeerAuthenticator): void {
    this.service.register(server, authorize, authenticate);
  }

  /**
   * Ends every open stream whose call `select` picks (by its TLS peer, say), with `code` and `reason`
   * as its status; returns how many. The secure port closes the streams of revoked certificates so.
   */
  closeStreams(select: StreamSelector, code: grpc.status, reason: string): number {
    return this.service.closeStreams(select, code, reason);
  }

  /**
   * A push of everything, for tools and tests. A config edit needs none: the config directory names
   * what it changed in its registry's change event, which arrives through `discovery`.
   */
  requestFullPush(trigger?: ChangeTrigger): void {
    this.loop.add(everythingChanged(trigger));
  }

  stop(): void {
    this.observer.serverStopped?.();
    this.loop.stop();
    this.responses.stop();
    this.limiter.stop();
    for (const unsubscribe of this.unsubscribe) unsubscribe();
  }

  /** Every open stream, SotW and delta, oldest first. */
  streamList(): readonly AdsStream[] {
    return this.streams.list();
  }

  /** The oldest open stream of the proxy with this node id. */
  findStream(proxyId: string): AdsStream | undefined {
    return this.streams.find(proxyId);
  }

  /** The state-of-the-world streams, with their protocol state (the debug views and tests read it). */
  connectionList(): readonly SotwConnection[] {
    return this.streams.list().filter((s): s is SotwConnection => s instanceof SotwConnection);
  }

  /** The delta streams, with their protocol state. */
  deltaConnectionList(): readonly DeltaConnection[] {
    return this.streams.list().filter((s): s is DeltaConnection => s instanceof DeltaConnection);
  }

  /** The resources of `typeUrl` the stream was last sent, with what their cached builds read (read-only). */
  sentOrigins(stream: StreamView, typeUrl: string): SentOrigin[] {
    return sentOrigins(this.loop.cache, this.generators, stream, typeUrl);
  }

  /** Streams open, by protocol variant and kind of client. */
  streamCounts(): StreamCount[] {
    return this.streams.counts();
  }
}
