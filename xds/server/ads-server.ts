// envoy.service.discovery.v3.AggregatedDiscoveryService on @grpc/grpc-js: state of the world
// (StreamAggregatedResources, what gRPC clients speak) and incremental (DeltaAggregatedResources).
// It owns the connections and the serving view. Model changes are debounced (push-debouncer.ts),
// applied to the shared resource cache (which reports exactly what changed), and handed to the
// streams that watch it; each stream sends through its own pump under server-wide flow control.
import * as grpc from '@grpc/grpc-js';
import { NO_MESH_CONFIG, type MeshConfig, type MeshConfigSource } from '../../mesh/mesh-config.js';
import type { ChangeEvent } from '../../model/change.js';
import type { ServiceDiscovery } from '../../model/discovery.js';
import type { Logger } from '../../log/logger.js';
import type { PortolanMetrics } from '../../metrics/metrics.js';
import { AdsConnection, StreamError, type PushObserver } from './sotw-connection.js';
import { BatchedConnectionLog, type ConnectionLog } from './connection-log.js';
import { DeltaConnection } from './delta-connection.js';
import { DEFAULT_FLOW_CONTROL, PushLimiter, type FlowControlOptions } from './flow-control.js';
import type { GenerateContext } from '../generators/generator.js';
import { GeneratorTable } from '../generators/index.js';
import { checkPushConsistency } from '../validate/push-consistency.js';
import { validatePushesEnabled } from '../validate/validating-generator.js';
import { proxyFromNode, type Proxy } from '../proxy/proxy.js';
import { decodeAny } from '../proto/protos.js';
import { DEFAULT_DEBOUNCE, PushDebouncer, type MergedChange } from './push-debouncer.js';
import { readPlainDeltaRequest, readPlainRequest } from './request-reader.js';
import { ResourceCache } from './resource-cache.js';
import { ResponseCache } from './response-cache.js';
import type { PushRound } from './stream-pump.js';
import { SubscriptionIndex } from './subscription-index.js';
import { shortTypeName } from '../proto/type-urls.js';
import { decodeDeltaDiscoveryRequest, decodeDiscoveryRequest } from '../proto/wire.js';
import type { Catalog } from '../../model/catalog.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const DELTA_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';

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

const ADS_SERVICE: grpc.ServiceDefinition = {
  StreamAggregatedResources: bidi(ADS_PATH),
  DeltaAggregatedResources: bidi(DELTA_PATH),
};

/** The serving state streams read: one catalog and mesh config per generation. */
export interface ServingView {
  readonly generation: number;
  readonly catalog: Catalog;
  readonly config: MeshConfig;
  readonly trustDomain?: string;
}

export interface AdsServerOptions {
  readonly discovery: ServiceDiscovery;
  /** The traffic config (the config directory); a change to it is a full push. */
  readonly meshConfig?: MeshConfigSource;
  readonly logger: Logger;
  /** Quiet period: a push goes out after this long without a new change (default 100 ms). */
  readonly pushWindowMs?: number;
  /** No change waits longer than this for its push (default 10 s). */
  readonly maxPushDelayMs?: number;
  readonly flowControl?: Partial<FlowControlOptions>;
  readonly generators?: GeneratorTable;
  /**
   * Check every push for dangling references across each Envoy view (debug; default from
   * PORTOLAN_VALIDATE_PUSHES, which also validates each resource against Envoy's rules).
   */
  readonly checkConsistency?: boolean;
  readonly metrics?: PortolanMetrics;
  /** Where connections are recorded for the history (the store). */
  readonly connectionLog?: ConnectionLog;
  /** The SPIFFE trust domain, for the peer identities TLS contexts match. */
  readonly trustDomain?: string;
}

/** Decides, from the first request's node and the call (its TLS peer), whether a stream may proceed. */
export type AdsAuthorizer = (
  proxy: Proxy,
  call: grpc.ServerDuplexStream<Buffer, Buffer>,
) => { code: grpc.status; reason: string } | undefined;

export type { ConnectionLog } from './connection-log.js';

type Connection = AdsConnection | DeltaConnection;

export class AdsServer {
  private readonly connections = new Map<string, AdsConnection>();
  private readonly deltaConnections = new Map<string, DeltaConnection>();
  private readonly cache: ResourceCache;
  private readonly responses = new ResponseCache();
  private readonly index = new SubscriptionIndex<object>();
  private readonly limiter: PushLimiter;
  private readonly generators: GeneratorTable;
  private readonly checkConsistency: boolean;
  private readonly debouncer: PushDebouncer;
  private readonly meshConfig: MeshConfigSource;
  private readonly unsubscribe: (() => void)[];
  private readonly observer: PushObserver | undefined;
  private readonly connectionLog: BatchedConnectionLog | undefined;
  private view: ServingView;
  private connectionCounter = 0;
  /** Pushes so far (one per debounced batch). */
  pushes = 0;

  constructor(private readonly options: AdsServerOptions) {
    this.generators = options.generators ?? new GeneratorTable();
    this.checkConsistency = options.checkConsistency ?? validatePushesEnabled();
    this.connectionLog = options.connectionLog && new BatchedConnectionLog(options.connectionLog);
    this.meshConfig = options.meshConfig ?? NO_MESH_CONFIG;
    this.view = {
      generation: 0,
      catalog: options.discovery.catalog(),
      config: this.meshConfig.meshConfig(),
      ...(this.options.trustDomain && { trustDomain: this.options.trustDomain }),
    };
    this.cache = new ResourceCache((proxy) => this.context(proxy));
    this.limiter = new PushLimiter({ ...DEFAULT_FLOW_CONTROL, ...options.flowControl });
    this.debouncer = new PushDebouncer(
      {
        quietMs: options.pushWindowMs ?? DEFAULT_DEBOUNCE.quietMs,
        maxDelayMs: options.maxPushDelayMs ?? DEFAULT_DEBOUNCE.maxDelayMs,
      },
      (c) => this.push(c),
      () => performance.now(),
      () => this.limiter.queuedPushes === 0,
    );
    this.limiter.onQueueEmpty = () => this.debouncer.resume();
    this.unsubscribe = [
      options.discovery.onChange((e) => {
        options.metrics?.modelChanges.inc({ kind: e.endpointsOnly ? 'endpoints' : 'services' });
        this.debouncer.add(e);
      }),
      this.meshConfig.onConfigChange(() => this.requestFullPush()),
    ];
    const metrics = options.metrics;
    // Label lookups cost more than the increments; resolve each type's children once.
    const byType = new Map<string, ReturnType<typeof typeMetrics>>();
    const typeMetrics = (m: PortolanMetrics, type: string) => ({
      responses: m.responses.labels({ type }),
      resources: m.resourcesSent.labels({ type }),
      bytes: m.bytesSent.labels({ type }),
      build: m.responseBuildSeconds.labels({ type }),
    });
    this.observer = metrics && {
      sent(typeUrl, resources, bytes, buildMs) {
        let m = byType.get(typeUrl);
        if (!m) byType.set(typeUrl, (m = typeMetrics(metrics, shortTypeName(typeUrl))));
        m.responses.inc();
        m.resources.inc(resources);
        m.bytes.inc(bytes);
        m.build.observe(buildMs / 1000);
      },
      nack(typeUrl) {
        metrics.nacks.inc({ type: shortTypeName(typeUrl) });
      },
    };
    metrics?.watchAds({
      streams: () => this.streamCounts(),
      queued: () => this.limiter.queued,
      inFlight: () => this.limiter.inFlight,
      cachedResources: () => this.cache.size,
    });
  }

  /** Serves ADS on `server`; with `authorize`, each stream's first node is checked before anything is sent. */
  register(server: grpc.Server, authorize?: AdsAuthorizer): void {
    server.addService(ADS_SERVICE, {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<Buffer, Buffer>) =>
        this.handleStream(call, 'sotw', authorize),
      DeltaAggregatedResources: (call: grpc.ServerDuplexStream<Buffer, Buffer>) =>
        this.handleStream(call, 'delta', authorize),
    });
  }

  /** A push for reasons outside the service model (traffic config changed): everything is re-evaluated. */
  requestFullPush(): void {
    this.debouncer.add({ hostnames: new Set(), endpointsOnly: false });
  }

  stop(): void {
    this.connectionLog?.flush();
    this.debouncer.stop();
    this.limiter.stop();
    for (const unsubscribe of this.unsubscribe) unsubscribe();
  }

  /** The state-of-the-world streams (what the debug views and config dumps read). */
  connectionList(): readonly AdsConnection[] {
    return [...this.connections.values()];
  }

  deltaConnectionList(): readonly DeltaConnection[] {
    return [...this.deltaConnections.values()];
  }

  /** Streams open, by protocol variant and kind of client. */
  streamCounts(): { api: string; kind: string; count: number }[] {
    const counts = new Map<string, number>();
    for (const c of [...this.connections.values(), ...this.deltaConnections.values()]) {
      const key = `${c.api} ${c.proxy?.kind ?? 'unknown'}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([key, count]) => {
      const [api = '', kind = ''] = key.split(' ');
      return { api, kind, count };
    });
  }

  /** What the proxy with this node id was last sent, decoded (for /debug/config_dump). */
  configDump(proxyId: string): Record<string, unknown>[] | undefined {
    const conn = this.connectionList().find((c) => c.proxy?.id === proxyId);
    if (conn) {
      return conn.state.watchedTypes().map((typeUrl) => ({
        type: shortTypeName(typeUrl),
        typeUrl,
        version: conn.state.typeState(typeUrl)?.sent?.version ?? '',
        resources: conn.lastSentResources(typeUrl).map((r) => decodeAny(r.typeUrl, r.value)),
      }));
    }
    const delta = this.deltaConnectionList().find((c) => c.proxy?.id === proxyId);
    if (!delta) return undefined;
    return delta.state.watchedTypes().map((typeUrl) => ({
      type: shortTypeName(typeUrl),
      typeUrl,
      version: delta.state.type(typeUrl)?.lastNonce ?? '',
      resources: delta.heldResources(typeUrl).map((r) => decodeAny(r.typeUrl, r.value)),
    }));
  }

  private context(proxy: Proxy): GenerateContext {
    return {
      proxy,
      catalog: this.view.catalog,
      config: this.view.config,
      ...(this.view.trustDomain && { trustDomain: this.view.trustDomain }),
    };
  }

  private push(change: MergedChange): void {
    const started = performance.now();
    const metrics = this.options.metrics;
    const { event } = change;
    metrics?.debounceSeconds.observe((started - change.firstSeen) / 1000);
    metrics?.changesPerPush.observe(change.merged);
    this.view = {
      generation: this.view.generation + 1,
      catalog: this.options.discovery.catalog(),
      config: this.meshConfig.meshConfig(),
      ...(this.options.trustDomain && { trustDomain: this.options.trustDomain }),
    };
    this.pushes += 1;
    const kind = pushKind(event);
    metrics?.pushes.inc({ kind });
    const changes = this.cache.apply(event);
    const round = this.round(change.firstSeen, kind);
    // Only the streams that subscribe to something that changed (every stream on a config change).
    const streams: Iterable<Connection> = changes.all
      ? [...this.connections.values(), ...this.deltaConnections.values()]
      : (this.index.affected(changes) as Set<Connection>);
    for (const conn of streams) {
      // Counted before the stream may finish (synchronously, when it has nothing to send).
      round.add();
      if (!conn.onChange(changes, round.member)) round.member.done();
    }
    metrics?.pushSeconds.observe({ kind }, (performance.now() - started) / 1000);
    round.sealed();
    if (this.checkConsistency) this.checkEnvoyViews();
  }

  private checkEnvoyViews(): void {
    const contexts = [...this.connections.values(), ...this.deltaConnections.values()].flatMap((c) =>
      c.proxy ? [this.context(c.proxy)] : [],
    );
    checkPushConsistency(this.generators, contexts, this.options.logger);
  }

  // Counts the streams a push touched; when the last of them has sent, the push has converged.
  private round(firstSeen: number, kind: string): { member: PushRound; add(): void; sealed(): void } {
    let pending = 1; // the push itself, released when every stream was handed its work
    const metrics = this.options.metrics;
    const finish = (): void => {
      if (--pending > 0) return;
      metrics?.convergenceSeconds.observe({ kind }, (performance.now() - firstSeen) / 1000);
    };
    return {
      member: { done: finish },
      add: () => {
        pending += 1;
      },
      sealed: finish,
    };
  }

  private logDisconnect(logId: object, conn: AdsConnection): void {
    const acks: Record<string, unknown> = {};
    const nacks: Record<string, unknown> = {};
    for (const typeUrl of conn.state.watchedTypes()) {
      const t = conn.state.typeState(typeUrl);
      if (t?.ackedVersion) acks[shortTypeName(typeUrl)] = { version: t.ackedVersion, at: t.ackedAt };
      if (t?.nack) nacks[shortTypeName(typeUrl)] = t.nack;
    }
    this.connectionLog?.disconnected(logId, acks, nacks);
  }

  private handleStream(
    call: grpc.ServerDuplexStream<Buffer, Buffer>,
    api: 'sotw' | 'delta',
    authorize?: AdsAuthorizer,
  ): void {
    const peer = call.getPeer();
    const log = this.options.logger;
    // Serving before every registry has synced would hand proxies a partial mesh; make them retry.
    if (!this.options.discovery.hasSynced()) {
      call.emit('error', {
        code: grpc.status.UNAVAILABLE,
        details: 'portolan is not ready: registries still syncing',
      });
      return;
    }
    const id = `conn-${++this.connectionCounter}`;
    let closed = false;
    const deps = {
      generators: this.generators,
      cache: this.cache,
      responses: this.responses,
      limiter: this.limiter,
      index: this.index,
      send: (bytes: Buffer, drained: () => void) => {
        if (closed) return;
        call.write(bytes, drained);
      },
      logger: log,
      ...(this.observer && { observer: this.observer }),
    };
    const conn: Connection =
      api === 'sotw' ? new AdsConnection(id, peer, deps) : new DeltaConnection(id, peer, deps);
    if (conn instanceof AdsConnection) this.connections.set(id, conn);
    else this.deltaConnections.set(id, conn);
    log.debug({ conn: id, peer, api }, 'ADS stream opened');
    let logged = false;
    let logId: object | undefined;
    const close = (reason: string): void => {
      if (closed) return;
      closed = true;
      conn.close();
      this.index.remove(conn);
      this.connections.delete(id);
      this.deltaConnections.delete(id);
      if (logId !== undefined && conn instanceof AdsConnection) this.logDisconnect(logId, conn);
      log.debug({ conn: id, peer, node: conn.proxy?.id, reason }, 'ADS stream closed');
    };
    call.on('data', (bytes: Buffer) => {
      if (closed) return;
      try {
        const req =
          api === 'sotw'
            ? (readPlainRequest(bytes) ?? decodeDiscoveryRequest(bytes))
            : (readPlainDeltaRequest(bytes) ?? decodeDeltaDiscoveryRequest(bytes));
        if (authorize && !conn.proxy && req.node) {
          const refusal = authorize(proxyFromNode(req.node), call);
          if (refusal) throw new StreamError(refusal.code, refusal.reason);
        }
        if (conn instanceof AdsConnection)
          conn.handleRequest(req as ReturnType<typeof decodeDiscoveryRequest>);
        else conn.handleRequest(req as ReturnType<typeof decodeDeltaDiscoveryRequest>);
        if (!logged && conn.proxy) {
          logged = true;
          // Per-stream lines are debug: at thousands of streams, synchronous log writes cost seconds.
          log.debug({ conn: id, peer, api, node: conn.proxy.id, kind: conn.proxy.kind }, 'ADS stream opened');
          logId = this.connectionLog?.connected(conn.proxy.id, peer, conn.proxy.kind);
        }
      } catch (err) {
        const code = err instanceof StreamError ? err.code : grpc.status.INVALID_ARGUMENT;
        const details = err instanceof Error ? err.message : String(err);
        log.warn({ conn: id, peer, code, details }, 'refusing ADS stream');
        close('refused');
        call.emit('error', { code, details });
      }
    });
    call.on('end', () => {
      close('client closed');
      call.end();
    });
    call.on('cancelled', () => close('cancelled'));
    call.on('error', () => close('error'));
  }
}

function pushKind(event: ChangeEvent): string {
  if (event.hostnames.size === 0) return 'config';
  return event.endpointsOnly ? 'eds' : 'services';
}
