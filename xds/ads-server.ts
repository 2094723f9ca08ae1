// envoy.service.discovery.v3.AggregatedDiscoveryService on @grpc/grpc-js, state of the world. It owns
// the connections and the serving view; the model's change events become pushes to every stream.
import * as grpc from '@grpc/grpc-js';
import { NO_MESH_CONFIG, type MeshConfigSource } from '../config-dir/mesh-config.js';
import type { ChangeEvent } from '../model/change.js';
import type { ServiceDiscovery } from '../model/discovery.js';
import type { Logger } from '../log/logger.js';
import type { PortolanMetrics } from '../metrics/metrics.js';
import { AdsConnection, StreamError, type ServingView } from './ads-connection.js';
import { GeneratorTable } from './generators/index.js';
import { proxyFromNode, type Proxy } from './proxy.js';
import { decodeAny } from './protos.js';
import { PushDebouncer } from './push-debouncer.js';
import { ResourceCache } from './resource-cache.js';
import { shortTypeName } from './type-urls.js';
import { decodeDiscoveryRequest } from './wire.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

const identity = (b: Buffer): Buffer => b;

const ADS_SERVICE: grpc.ServiceDefinition = {
  StreamAggregatedResources: {
    path: ADS_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

export interface AdsServerOptions {
  readonly discovery: ServiceDiscovery;
  /** The traffic config (the config directory); a change to it is a full push. */
  readonly meshConfig?: MeshConfigSource;
  readonly logger: Logger;
  /** Changes arriving within this window are merged into one push (default 100 ms). */
  readonly pushWindowMs?: number;
  readonly generators?: GeneratorTable;
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

export interface ConnectionLog {
  /** Returns an id to pass to `disconnected`. */
  connected(nodeId: string, peer: string, kind: string): number | undefined;
  disconnected(id: number, lastAcks: Record<string, unknown>, lastNacks: Record<string, unknown>): void;
}

export class AdsServer {
  private readonly connections = new Map<string, AdsConnection>();
  private readonly cache = new ResourceCache();
  private readonly generators: GeneratorTable;
  private readonly debouncer: PushDebouncer;
  private readonly meshConfig: MeshConfigSource;
  private readonly unsubscribe: (() => void)[];
  private view: ServingView;
  private connectionCounter = 0;
  pushes = 0;

  constructor(private readonly options: AdsServerOptions) {
    this.generators = options.generators ?? new GeneratorTable();
    this.meshConfig = options.meshConfig ?? NO_MESH_CONFIG;
    this.view = {
      generation: 0,
      catalog: options.discovery.catalog(),
      config: this.meshConfig.meshConfig(),
      ...(this.options.trustDomain && { trustDomain: this.options.trustDomain }),
    };
    this.debouncer = new PushDebouncer(options.pushWindowMs ?? 100, (e) => this.pushAll(e));
    this.unsubscribe = [
      options.discovery.onChange((e) => this.debouncer.add(e)),
      this.meshConfig.onConfigChange(() => this.requestFullPush()),
    ];
  }

  /** Serves ADS on `server`; with `authorize`, each stream's first node is checked before anything is sent. */
  register(server: grpc.Server, authorize?: AdsAuthorizer): void {
    server.addService(ADS_SERVICE, {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<Buffer, Buffer>) =>
        this.handleStream(call, authorize),
    });
  }

  /** A push for reasons outside the service model (traffic config changed): everything is re-evaluated. */
  requestFullPush(): void {
    this.debouncer.add({ hostnames: new Set(), endpointsOnly: false });
  }

  stop(): void {
    this.debouncer.stop();
    for (const unsubscribe of this.unsubscribe) unsubscribe();
  }

  connectionList(): readonly AdsConnection[] {
    return [...this.connections.values()];
  }

  /** What the proxy with this node id was last sent, decoded (for /debug/config_dump). */
  configDump(proxyId: string): Record<string, unknown>[] | undefined {
    const conn = this.connectionList().find((c) => c.proxy?.id === proxyId);
    if (!conn) return undefined;
    return conn.state.watchedTypes().map((typeUrl) => ({
      type: shortTypeName(typeUrl),
      typeUrl,
      version: conn.state.typeState(typeUrl)?.sent?.version ?? '',
      resources: conn.lastSentResources(typeUrl).map((r) => decodeAny(r.typeUrl, r.value)),
    }));
  }

  private pushAll(event: ChangeEvent): void {
    this.view = {
      generation: this.view.generation + 1,
      catalog: this.options.discovery.catalog(),
      config: this.meshConfig.meshConfig(),
      ...(this.options.trustDomain && { trustDomain: this.options.trustDomain }),
    };
    this.pushes += 1;
    this.options.metrics?.pushes.inc({ kind: event.endpointsOnly ? 'eds' : 'full' });
    for (const conn of this.connections.values()) conn.push(event);
  }

  private logDisconnect(logId: number, conn: AdsConnection): void {
    const acks: Record<string, unknown> = {};
    const nacks: Record<string, unknown> = {};
    for (const typeUrl of conn.state.watchedTypes()) {
      const t = conn.state.typeState(typeUrl);
      if (t?.ackedVersion) acks[shortTypeName(typeUrl)] = { version: t.ackedVersion, at: t.ackedAt };
      if (t?.nack) nacks[shortTypeName(typeUrl)] = t.nack;
    }
    this.options.connectionLog?.disconnected(logId, acks, nacks);
  }

  private handleStream(call: grpc.ServerDuplexStream<Buffer, Buffer>, authorize?: AdsAuthorizer): void {
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
    const conn = new AdsConnection(id, peer, {
      generators: this.generators,
      cache: this.cache,
      view: () => this.view,
      send: (bytes) => call.write(bytes),
      logger: log,
      ...(this.options.metrics && { metrics: this.options.metrics }),
    });
    this.connections.set(id, conn);
    log.info({ conn: id, peer }, 'ADS stream opened');
    let closed = false;
    let logged = false;
    let logId: number | undefined;
    const close = (reason: string): void => {
      if (closed) return;
      closed = true;
      this.connections.delete(id);
      if (logId !== undefined) this.logDisconnect(logId, conn);
      log.info({ conn: id, peer, node: conn.proxy?.id, reason }, 'ADS stream closed');
    };
    call.on('data', (bytes: Buffer) => {
      if (closed) return;
      try {
        const req = decodeDiscoveryRequest(bytes);
        if (authorize && !conn.proxy && req.node) {
          const refusal = authorize(proxyFromNode(req.node), call);
          if (refusal) throw new StreamError(refusal.code, refusal.reason);
        }
        conn.handleRequest(req);
        if (!logged && conn.proxy) {
          logged = true;
          logId = this.options.connectionLog?.connected(conn.proxy.id, peer, conn.proxy.kind);
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
