// One ADS stream: applies the protocol state machine to requests, and answers them and pushes with
// resources from the shared cache. Everything here runs synchronously, so requests and pushes on one
// stream never interleave.
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ChangeEvent } from '../model/change.js';
import type { Catalog } from '../model/catalog.js';
import type { MeshConfig } from '../config-dir/mesh-config.js';
import type { Logger } from '../log/logger.js';
import type { PortolanMetrics } from '../metrics/metrics.js';
import type { GeneratorTable } from './generators/index.js';
import { proxyFromNode, NodeError, type Proxy } from './proxy.js';
import type { ResourceCache } from './resource-cache.js';
import { versionOf, type EncodedResource } from './resource.js';
import { StreamState } from './stream-state.js';
import { CLUSTER, ENDPOINT, PUSH_ORDER, shortTypeName } from './type-urls.js';
import { encodeDiscoveryResponse, type DiscoveryRequest } from './wire.js';

/** The serving state a connection reads: one catalog and mesh config per generation. */
export interface ServingView {
  readonly generation: number;
  readonly catalog: Catalog;
  readonly config: MeshConfig;
  readonly trustDomain?: string;
}

export interface ConnectionDeps {
  readonly generators: GeneratorTable;
  readonly cache: ResourceCache;
  readonly view: () => ServingView;
  readonly send: (bytes: Buffer) => void;
  readonly logger: Logger;
  readonly metrics?: PortolanMetrics;
}

/** A request the server must refuse; the stream ends with this gRPC status. */
export class StreamError extends Error {
  constructor(
    readonly code: GrpcStatus,
    message: string,
  ) {
    super(message);
  }
}

export class AdsConnection {
  readonly connectedAt = new Date().toISOString();
  readonly state = new StreamState();
  private proxyInfo: Proxy | undefined;
  private nonceCounter = 0;
  private readonly lastSent = new Map<string, readonly EncodedResource[]>();

  constructor(
    readonly id: string,
    readonly peer: string,
    private readonly deps: ConnectionDeps,
  ) {}

  get proxy(): Proxy | undefined {
    return this.proxyInfo;
  }

  handleRequest(req: DiscoveryRequest): void {
    if (!req.typeUrl)
      throw new StreamError(GrpcStatus.INVALID_ARGUMENT, 'DiscoveryRequest.type_url is required on ADS');
    if (!this.proxyInfo) {
      if (!req.node)
        throw new StreamError(GrpcStatus.INVALID_ARGUMENT, 'the first DiscoveryRequest must carry node');
      try {
        this.proxyInfo = proxyFromNode(req.node);
      } catch (err) {
        if (err instanceof NodeError)
          throw new StreamError(GrpcStatus.INVALID_ARGUMENT, `invalid node: ${err.message}`);
        throw err;
      }
    }
    const outcome = this.state.onRequest(req);
    const log = { conn: this.id, type: shortTypeName(req.typeUrl), nonce: req.responseNonce };
    if (outcome.action === 'ignore') {
      this.deps.logger.debug(log, 'ignoring request with stale nonce');
      return;
    }
    if (outcome.action === 'nack') {
      this.deps.logger.warn({ ...log, error: req.errorDetail?.message }, 'client rejected config (NACK)');
      this.deps.metrics?.nacks.inc({ type: shortTypeName(req.typeUrl) });
    }
    if (outcome.respond) this.respond(req.typeUrl, true);
  }

  /**
   * Re-sends each watched type whose resources changed. An endpoint-only change touches EDS, and CDS
   * too: a LOGICAL_DNS cluster embeds its endpoint (CDS goes out only if its version changed).
   */
  push(event: ChangeEvent): void {
    if (!this.proxyInfo) return;
    const watched = new Set(this.state.watchedTypes());
    const types = event.endpointsOnly
      ? [CLUSTER, ENDPOINT]
      : [...PUSH_ORDER, ...[...watched].filter((t) => !PUSH_ORDER.includes(t))];
    for (const typeUrl of types) if (watched.has(typeUrl)) this.respond(typeUrl, false);
  }

  lastSentResources(typeUrl: string): readonly EncodedResource[] {
    return this.lastSent.get(typeUrl) ?? [];
  }

  private respond(typeUrl: string, force: boolean): void {
    const proxy = this.proxyInfo;
    const subscription = this.state.subscription(typeUrl);
    if (!proxy || !subscription) return;
    const view = this.deps.view();
    const ctx = {
      proxy,
      catalog: view.catalog,
      config: view.config,
      ...(view.trustDomain && { trustDomain: view.trustDomain }),
    };
    const generator = this.deps.generators.find(proxy.kind, typeUrl);
    const resources: EncodedResource[] = [];
    if (generator) {
      const names = new Set(subscription.names);
      if (subscription.wildcard) for (const n of generator.wildcardNames(ctx)) names.add(n);
      for (const name of names) {
        const r = this.deps.cache.get(view.generation, generator, ctx, name);
        if (r) resources.push(r);
      }
    }
    const version = versionOf(resources);
    if (!this.state.shouldSend(typeUrl, version, force)) return;
    const nonce = `${++this.nonceCounter}`;
    this.deps.send(encodeDiscoveryResponse({ versionInfo: version, resources, typeUrl, nonce }));
    this.deps.metrics?.responses.inc({ type: shortTypeName(typeUrl) });
    this.state.recordSent(typeUrl, {
      version,
      nonce,
      names: resources.map((r) => r.name),
      at: new Date().toISOString(),
    });
    this.lastSent.set(typeUrl, resources);
  }
}
