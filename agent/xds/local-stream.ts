// What the SotW and delta proxy streams share: the local gRPC call (writes that hold the control
// plane back when the local client does not read), ending it with a status, the upstream link, and
// the first request's node check. One concept: a local client's stream, proxied.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../log/logger.js';
import type { UpstreamConnection } from '../upstream/connection.js';
import { UpstreamLink } from '../upstream/link.js';
import { HEALTH_INFO } from '../../xds/proto/type-urls.js';
import { cacheKey } from './cache-key.js';
import type { NodeCache } from './node-cache.js';
import { claimNode, type AgentIdentity, type Api, type NodeObject } from './messages.js';

export type LocalCall = grpc.ServerDuplexStream<Buffer, Buffer>;

/** Counts the proxy reports (metrics). */
export interface ProxyObserver {
  servedFromCache?(stream: LocalStream, typeUrl: string, resources: number): void;
  refused?(stream: LocalStream, code: grpc.status, reason: string): void;
}

export interface ProxyDeps {
  readonly connection: UpstreamConnection;
  readonly cache: NodeCache;
  readonly identity: AgentIdentity;
  readonly logger: Logger;
  /** A subscription the control plane has not answered within this is served from the cache. */
  readonly fallbackMs: number;
  readonly observer?: ProxyObserver;
}

export interface TypeSummary {
  readonly typeUrl: string;
  readonly wildcard: boolean;
  readonly names: readonly string[];
  /** What the client last accepted: SotW version_info, delta nonce. */
  readonly acked: string;
  /** Where the last response came from. */
  readonly lastFrom?: 'control plane' | 'cache';
}

const ADS_SERVICE = '/envoy.service.discovery.v3.AggregatedDiscoveryService/';
export const UPSTREAM_PATH: Record<Api, string> = {
  sotw: `${ADS_SERVICE}StreamAggregatedResources`,
  delta: `${ADS_SERVICE}DeltaAggregatedResources`,
};

export abstract class LocalStream {
  readonly openedAt = new Date();
  protected node: NodeObject | undefined;
  protected nodeIdValue: string | undefined;
  /** The node cache's key for this stream's node (the whole node, cache-key.ts). */
  protected cacheKeyValue = '';
  protected link: UpstreamLink | undefined;
  /** Responses this stream was served from the cache. */
  cacheResponses = 0;
  private closed = false;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /**
   * The fallback deadline, per stream: until the control plane has answered this stream once,
   * whatever is pending at `deadline` (and whatever is asked after it) is served from the cache at
   * once, so a node that waits gets all its types then, not one fallback time per type.
   */
  private deadline: number | undefined;
  private deadlineTimer: NodeJS.Timeout | undefined;
  private upstreamAnswered = false;
  private readonly waiting = new Set<string>();
  private readonly closeListeners = new Set<() => void>();

  constructor(
    readonly id: string,
    readonly api: Api,
    readonly peer: string,
    protected readonly call: LocalCall,
    protected readonly deps: ProxyDeps,
  ) {}

  get nodeId(): string | undefined {
    return this.nodeIdValue;
  }

  upstreamOpen(): boolean {
    return this.link?.isOpen() ?? false;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  abstract types(): TypeSummary[];

  /** One request from the local client, as it came off the wire. */
  abstract handle(bytes: Buffer): void;

  onClose(listener: () => void): void {
    this.closeListeners.add(listener);
  }

  /** Ends the local stream with `code` (OK: a clean end) and lets go of the upstream one. */
  /**
   * Decodes one request and checks what every API requires: the first carries the node (and is
   * admitted), each names its type. Ends the stream and returns undefined otherwise.
   */
  protected accept<R extends { readonly node?: unknown; readonly typeUrl: string }>(
    bytes: Buffer,
    message: string,
    decode: (bytes: Buffer) => R,
  ): { readonly req: R; readonly first: boolean } | undefined {
    let req: R;
    try {
      req = decode(bytes);
    } catch (err) {
      this.end(grpc.status.INVALID_ARGUMENT, `malformed ${message}: ${(err as Error).message}`);
      return undefined;
    }
    const first = !this.node;
    if (first) {
      if (!req.node) {
        this.end(grpc.status.INVALID_ARGUMENT, 'the first request must carry node');
        return undefined;
      }
      if (!this.admit(bytes)) return undefined;
    }
    if (!req.typeUrl) {
      this.end(grpc.status.INVALID_ARGUMENT, `${message}.type_url is required on ADS`);
      return undefined;
    }
    if (req.typeUrl === HEALTH_INFO) {
      // Health reports change the VM's endpoint: the agent's own stream sends them, no local client.
      this.end(
        grpc.status.PERMISSION_DENIED,
        `${HEALTH_INFO} reports belong to the agent's own stream; a local client may not send them`,
      );
      return undefined;
    }
    return { req, first };
  }

  end(code: grpc.status, details: string): void {
    if (this.closed) return;
    if (code !== grpc.status.OK) {
      this.deps.logger.warn(
        { stream: this.id, node: this.nodeIdValue, code, details },
        'ending local xDS stream',
      );
      this.deps.observer?.refused?.(this, code, details);
      this.call.emit('error', { code, details });
    } else {
      this.call.end();
    }
    this.close();
  }

  /** The client went away (or the agent stops): no more writes. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.link?.close();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.waiting.clear();
    for (const l of this.closeListeners) l();
  }

  /** The node of the first request, checked and completed; false when the stream was refused. */
  protected admit(bytes: Buffer): boolean {
    const claim = claimNode(bytes, this.api, this.deps.identity);
    if (!claim.ok) {
      this.end(claim.code, claim.message);
      return false;
    }
    this.node = claim.node;
    this.nodeIdValue = claim.info.id ?? '';
    this.cacheKeyValue = cacheKey(this.nodeIdValue, claim.node);
    this.deadline = Date.now() + this.deps.fallbackMs;
    if (claim.stripped.length > 0)
      this.deps.logger.warn(
        { stream: this.id, node: this.nodeIdValue, peer: this.peer, removed: claim.stripped },
        "local client's node carries registration metadata: removed (the agent's own stream registers the VM)",
      );
    this.link = new UpstreamLink(this.deps.connection, UPSTREAM_PATH[this.api], {
      replay: () => this.replay(),
      message: (b, generation) => this.fromUpstream(b, generation),
      refused: (s) => this.end(s.code, `the control plane refused the stream: ${s.details}`),
      lost: () => this.upstreamLost(),
    });
    return true;
  }

  protected abstract replay(): Buffer[];
  protected abstract fromUpstream(bytes: Buffer, generation: number): void;
  protected abstract upstreamLost(): void;
  /** Serves `typeUrl` from the cache if the control plane has not answered it; returns whether it did. */
  protected abstract serveFromCache(typeUrl: string): boolean;

  /** Writes to the local client; a client that does not read holds the control plane back. */
  protected write(bytes: Buffer): void {
    if (this.closed) return;
    if (!this.call.write(bytes)) {
      this.link?.pause();
      this.call.once('drain', () => this.link?.resume());
    }
  }

  /**
   * A subscription the control plane has yet to answer: from the cache at once while it is
   * unreachable, else if it has not answered within the fallback time.
   */
  protected awaitAnswer(typeUrl: string): void {
    if (this.closed) return;
    if (!this.link?.isOpen() || this.deps.connection.state === 'down') {
      this.serveFromCache(typeUrl);
      return;
    }
    if (!this.upstreamAnswered) {
      const deadline = this.deadline ?? Date.now() + this.deps.fallbackMs;
      if (Date.now() >= deadline) {
        this.serveFromCache(typeUrl);
        return;
      }
      this.waiting.add(typeUrl);
      this.deadlineTimer ??= setTimeout(() => {
        const pending = [...this.waiting];
        this.waiting.clear();
        for (const t of pending) this.serveFromCache(t);
      }, deadline - Date.now());
      return;
    }
    if (this.timers.has(typeUrl)) return;
    this.timers.set(
      typeUrl,
      setTimeout(() => {
        this.timers.delete(typeUrl);
        this.serveFromCache(typeUrl);
      }, this.deps.fallbackMs),
    );
  }

  protected answered(typeUrl: string): void {
    this.upstreamAnswered = true;
    this.waiting.delete(typeUrl);
    if (this.waiting.size === 0 && this.deadlineTimer) {
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = undefined;
    }
    const t = this.timers.get(typeUrl);
    if (t) clearTimeout(t);
    this.timers.delete(typeUrl);
  }

  protected nextNonce(): string {
    this.nonceCounter += 1;
    return `a${this.nonceCounter}`;
  }
  private nonceCounter = 0;
}
