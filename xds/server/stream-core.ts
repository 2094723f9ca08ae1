// What a SotW and a delta ADS stream share, everything but their wire protocol: the request preamble
// (bounds, the node and its admission, health reports, what is reported), each type's view of the
// shared cache, which changes concern the stream (onChange), the pump with one response in flight,
// make-before-break (make-before-break.ts) and the EDS re-warm after CDS. A variant
// (sotw-connection.ts, delta-connection.ts) reads a request into its protocol state (xds/protocol/)
// and builds a response from the cache; everything around both is here, once.
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ResourceGenerator } from '../generators/generator.js';
import type { NodeInfo, Proxy } from '../proxy/proxy.js';
import { isoNow } from '../protocol/wall-clock.js';
import { CLUSTER, ENDPOINT, HEALTH_INFO, shortTypeName } from '../proto/type-urls.js';
import {
  firstProxy,
  StreamError,
  type AdsApi,
  type AdsStream,
  type OutgoingMessage,
  type StreamCall,
  type StreamDeps,
  type TypeStatus,
} from './ads-stream.js';
import { healthReport } from './health-report.js';
import type { Subscription } from './observer.js';
import { MakeBeforeBreak, warmsClusters } from './make-before-break.js';
import type { EncodedResource } from '../proto/resource.js';
import { typeKey, wildcardKey, type ChangeSet, type ViewHold } from './resource-cache.js';
import { StreamPump, type PendingWork, type PumpTarget, type PushRound } from './stream-pump.js';
import { StreamGenerations } from './stream-generations.js';
import type { StreamWaitStatus } from './observer.js';

/** What a stream keeps per type besides its protocol state: made when the type is first needed. */
export interface TypeView {
  readonly generator: ResourceGenerator | undefined;
  /** This stream's hold on its view of the generator; its key follows config changes. */
  readonly hold: ViewHold | undefined;
  /** typeKey(kind, type), computed once. */
  readonly typeKey: string;
}

/** The fields of a request the core reads, in either variant. */
export interface CoreRequest {
  readonly node?: NodeInfo | undefined;
  readonly typeUrl: string;
  readonly errorDetail?: { readonly code: number; readonly message: string } | undefined;
}

/** A response a variant built, with what the core needs to know of it. */
export interface Built {
  readonly message: OutgoingMessage;
  readonly nonce: string;
  /** Resources in it (for delta, those added or updated). */
  readonly resources: number;
  /** Its protobuf size. */
  readonly bytes: number;
  /**
   * CDS to a client that warms clusters only: the clusters it sends that the client did not hold
   * with these bytes, and how many of them it did not hold at all.
   */
  readonly warm?: { readonly updated: readonly string[]; readonly added: number };
}

type Work = { force?: boolean; full?: boolean; names?: Iterable<string> };

export abstract class StreamCore<R extends CoreRequest, V extends TypeView> implements AdsStream, PumpTarget {
  readonly connectedAt = isoNow();
  peerIdentity: string | undefined;
  abstract readonly api: AdsApi;
  readonly pump: StreamPump;
  protected readonly order: MakeBeforeBreak;
  private proxyInfo: Proxy | undefined;
  private readonly views = new Map<string, V>();
  /**
   * Names to send again even if unchanged, per type: load assignments of clusters CDS re-sent. Made
   * on first use (only clients that warm clusters re-send): every stream's fields outlive scavenges.
   */
  private resend: Map<string, Set<string>> | undefined;
  private nonceCounter = 0;
  /** The request being applied marked work or released held work: kick the pump after it. */
  private due = false;
  /** The config generations of the responses sent, and of the pushes that changed something. */
  protected readonly generations = new StreamGenerations();
  /** The request being applied is a NACK (rejected() runs before answered()). */
  private rejecting = false;

  constructor(
    readonly id: string,
    readonly peer: string,
    protected readonly deps: StreamDeps,
    private readonly call: StreamCall,
  ) {
    // The stream is its own pump target: no adapter object and closures kept per stream.
    this.pump = new StreamPump(deps.limiter, this);
    this.order = new MakeBeforeBreak(this.pump, () => this.pump.kick());
  }

  get proxy(): Proxy | undefined {
    return this.proxyInfo;
  }

  /** The request message's name, for errors ("DiscoveryRequest"). */
  protected abstract readonly requestName: string;
  /** Reads one request, within the names bound (readBoundedRequest). */
  protected abstract read(bytes: Buffer, maxNames: number): R;
  /** Applies a request to the protocol state: `answered`, `rejected` and `want` tell the core. */
  protected abstract apply(req: R, proxy: Proxy): void;
  abstract subscription(typeUrl: string): Subscription | undefined;
  /** The types subscribed to, in the order first asked. */
  protected abstract watchedTypes(): Iterable<string>;
  /** Whether a change may be answered with the changed names alone (else the whole subscription). */
  protected abstract partial(typeUrl: string): boolean;
  /** Builds the response for `typeUrl`; `again`: names to send even if the client holds them. */
  protected abstract respond(
    typeUrl: string,
    work: PendingWork,
    view: V,
    proxy: Proxy,
    again: ReadonlySet<string> | undefined,
  ): Built | undefined;
  /** The per-type record of the variant, around the core's. */
  protected abstract makeView(base: TypeView): V;
  abstract typeStatus(): readonly TypeStatus[];
  abstract heldResources(typeUrl: string): readonly EncodedResource[];

  /** Whether the client holds `name` of `typeUrl` beyond its subscription (delta: until removed). */
  protected holdsName(_typeUrl: string, _name: string): boolean {
    return false;
  }

  handleRequest(bytes: Buffer): void {
    const req = this.read(bytes, this.deps.limits.maxNamesPerType);
    if (!this.proxyInfo && req.node) {
      // Parsed once: the admission checks and the stream read the same proxy.
      const proxy = firstProxy(req.node);
      this.call.admit?.(proxy);
      this.proxyInfo = proxy;
    }
    if (!req.typeUrl)
      throw new StreamError(GrpcStatus.INVALID_ARGUMENT, `${this.requestName}.type_url is required on ADS`);
    const proxy = (this.proxyInfo ??= firstProxy(req.node));
    if (req.typeUrl === HEALTH_INFO) {
      this.deps.observer.healthReported?.(this, healthReport(req.errorDetail));
      return;
    }
    this.deps.observer.request?.(this, req.typeUrl);
    this.apply(req, proxy);
    if (!this.due) return;
    this.due = false;
    this.pump.kick();
  }

  /** The client answered (ACK or NACK) its `typeUrl` response with `nonce`. */
  protected answered(typeUrl: string, nonce: string): void {
    if (!this.rejecting) this.generations.acked(typeUrl, nonce);
    this.rejecting = false;
    if (this.order.answered(typeUrl, nonce)) this.due = true;
  }

  /** The client rejected the `typeUrl` response with `nonce`. */
  protected rejected(req: R, nonce: string): void {
    const type = shortTypeName(req.typeUrl);
    this.deps.logger.warn(
      { conn: this.id, node: this.proxyInfo?.id ?? '', type, nonce, error: req.errorDetail?.message },
      'client rejected config (NACK)',
    );
    this.rejecting = true;
    const generation = this.generations.nacked(req.typeUrl, nonce);
    this.deps.observer.nack?.(this, {
      typeUrl: req.typeUrl,
      type,
      nonce,
      code: req.errorDetail?.code ?? 0,
      message: req.errorDetail?.message ?? '',
      ...(generation !== undefined && { generation }),
    });
  }

  /** The request asks for `work` on `typeUrl` (sent once the request is applied). */
  protected want(typeUrl: string, work: Work): void {
    this.pump.mark(typeUrl, work);
    this.due = true;
  }

  protected nextNonce(): string {
    return `${++this.nonceCounter}`;
  }

  /** Marks what `changes` touched for this stream; returns whether anything was. */
  onChange(changes: ChangeSet, round: PushRound): boolean {
    const proxy = this.proxyInfo;
    if (!proxy) return false;
    let touched = false;
    if (changes.all) {
      for (const typeUrl of this.watchedTypes()) {
        if (!this.typeView(typeUrl).generator) continue;
        this.pump.mark(typeUrl, { full: true });
        touched = true;
      }
    } else if (changes.moved) {
      // This stream's view of a type moved: what it holds of that type is built there anew.
      for (const [typeUrl, view] of this.views) {
        if (!view.hold || !changes.moved.has(view.hold) || !this.subscription(typeUrl)) continue;
        this.pump.mark(typeUrl, { full: true });
        touched = true;
      }
    }
    // Only the types that changed, and only this stream's kind: this runs per stream per push.
    for (const c of changes.types) {
      if (c.kind !== proxy.kind) continue;
      const sub = this.subscription(c.typeUrl);
      if (!sub) continue;
      const view = this.typeView(c.typeUrl);
      if (!view.generator) continue;
      if (sub.wildcard && changes.wildcards.has(wildcardKey(proxy.kind, c.typeUrl, view.hold?.key ?? ''))) {
        this.pump.mark(c.typeUrl, { full: true });
        touched = true;
        continue;
      }
      const all = sub.wildcard
        ? this.deps.cache.wildcardNames(view.generator, proxy, view.hold?.key).set
        : undefined;
      let hit: string[] | undefined;
      for (const n of c.names)
        if (sub.names.has(n) || all?.has(n) || this.holdsName(c.typeUrl, n)) (hit ??= []).push(n);
      if (!hit) continue;
      this.markNames(c.typeUrl, hit);
      touched = true;
    }
    // Names it asked for that did not exist may exist now, if their host changed.
    if (changes.hosts && changes.hosts.size > 0) {
      for (const typeUrl of this.watchedTypes()) {
        const names = this.deps.subscriptions.missingUnder(this, proxy.kind, typeUrl, changes.hosts);
        if (names.length === 0 || !this.typeView(typeUrl).generator) continue;
        this.markNames(typeUrl, names);
        touched = true;
      }
    }
    if (touched) {
      this.pump.join(round);
      this.pump.kick();
    }
    return touched;
  }

  changedBy(generation: number): void {
    if (generation > this.generations.changed) this.generations.changed = generation;
  }

  waitStatus(): StreamWaitStatus {
    const queued: string[] = [];
    for (const typeUrl of this.watchedTypes()) if (this.pump.has(typeUrl)) queued.push(typeUrl);
    return {
      changedGeneration: this.generations.changed,
      firstSentGeneration: this.generations.firstSent,
      queued,
    };
  }

  /** The generation fields of `typeUrl`'s TypeStatus (`nacked`: a NACK is in force). */
  protected generationOf(typeUrl: string, nacked: boolean): { sent?: number; nack?: number } {
    const g = this.generations.of(typeUrl);
    if (!g) return {};
    return nacked && g.nacked !== undefined ? { sent: g.sent, nack: g.nacked } : { sent: g.sent };
  }

  private markNames(typeUrl: string, names: readonly string[]): void {
    if (this.partial(typeUrl)) this.pump.mark(typeUrl, { names });
    else this.pump.mark(typeUrl, { full: true });
  }

  close(): void {
    this.pump.close();
    this.order.close();
    for (const view of this.views.values()) view.hold?.release();
  }

  /** The type's view if it was made (no hold is taken). */
  protected viewOf(typeUrl: string): V | undefined {
    return this.views.get(typeUrl);
  }

  protected typeView(typeUrl: string): V {
    let v = this.views.get(typeUrl);
    if (!v) {
      const proxy = this.proxyInfo;
      const generator = proxy && this.deps.generators.find(proxy.kind, typeUrl);
      v = this.makeView({
        generator,
        hold: proxy && generator ? this.deps.cache.retain(generator, proxy) : undefined,
        typeKey: typeKey(proxy?.kind ?? 'grpc', typeUrl),
      });
      this.views.set(typeUrl, v);
    }
    return v;
  }

  /** PumpTarget: the response for `typeUrl` now, or undefined when there is nothing to send. */
  build(typeUrl: string, work: PendingWork): OutgoingMessage | undefined {
    const proxy = this.proxyInfo;
    if (!proxy || !this.subscription(typeUrl)) return undefined;
    const started = performance.now();
    const again = this.resend?.get(typeUrl);
    if (again) this.resend?.delete(typeUrl);
    const built = this.respond(typeUrl, work, this.typeView(typeUrl), proxy, again);
    if (!built) return undefined;
    if (built.warm) this.clustersSent(built.nonce, built.warm.updated, built.warm.added);
    const generation = this.deps.configGeneration();
    this.generations.sent(typeUrl, built.nonce, generation);
    this.deps.observer.responseSent?.(this, {
      typeUrl,
      type: shortTypeName(typeUrl),
      resources: built.resources,
      bytes: built.bytes,
      buildMs: performance.now() - started,
      generation,
    });
    return built.message;
  }

  /** Whether CDS responses must say what they add and update (warm, in Built). */
  protected get warms(): boolean {
    return this.proxyInfo !== undefined && warmsClusters(this.proxyInfo);
  }

  // A CDS response went out to a client that warms clusters (Envoy). Its new clusters hold back LDS
  // and RDS until it answers (make-before-break.ts); and it re-warms every updated cluster, waiting
  // for its load assignment again: that goes out again even if unchanged, or the cluster stays warming.
  private clustersSent(nonce: string, updated: readonly string[], added: number): void {
    this.order.clustersSent(nonce, added);
    const eds = this.subscription(ENDPOINT);
    if (!eds) return;
    let again: Set<string> | undefined;
    for (const n of updated) if (eds.names.has(n)) (again ??= this.resend?.get(ENDPOINT) ?? new Set()).add(n);
    if (!again) return;
    (this.resend ??= new Map()).set(ENDPOINT, again);
    this.pump.mark(ENDPOINT, { names: again });
  }

  /** PumpTarget: hands `message` to the call; `drained` runs once gRPC has taken it. */
  write(message: OutgoingMessage, drained: () => void): void {
    this.call.send(message, drained);
  }

  /** PumpTarget: LDS and RDS wait while new clusters warm. */
  held(typeUrl: string): boolean {
    return this.order.holds(typeUrl);
  }

  /** PumpTarget: nothing is pending or in flight any more: what make-before-break kept goes now. */
  idle(): void {
    if (!this.order.settled()) return;
    if (this.subscription(CLUSTER)) this.pump.mark(CLUSTER, { full: true });
    if (this.subscription(ENDPOINT)) this.pump.mark(ENDPOINT, { full: true });
  }
}
