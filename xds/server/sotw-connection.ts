// One state-of-the-world ADS stream: applies the protocol state machine to requests, and answers
// them and pushes through its StreamPump (one response in flight, types in make-before-break order),
// with resources and whole response bodies from the shared caches.
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ResourceGenerator } from '../generators/generator.js';
import type { Proxy } from '../proxy/proxy.js';
import {
  readBoundedRequest,
  firstProxy,
  StreamError,
  type AdsStream,
  type OutgoingMessage,
  type StreamCall,
  type StreamDeps,
  type TypeStatus,
} from './ads-stream.js';
import { healthReport } from './health-report.js';
import { readPlainRequest, SOTW_FIELDS } from '../protocol/request-reader.js';
import { typeKey, wildcardKey, type ChangeSet, type ViewHold } from './resource-cache.js';
import type { EncodedResource } from '../proto/resource.js';
import { ownResponse, type SharedResponse } from './response-cache.js';
import { StreamPump, type PendingWork, type PumpTarget, type PushRound } from './stream-pump.js';
import { StreamState } from '../protocol/sotw-state.js';
import { CLUSTER, ENDPOINT, HEALTH_INFO, LISTENER, ROUTE, shortTypeName } from '../proto/type-urls.js';
import { decodeDiscoveryRequest, nonceFieldLength, type DiscoveryRequest } from '../proto/wire.js';
import { subscriptionKey } from './subscription-key.js';
import { isoNow } from '../protocol/wall-clock.js';

/** Types whose SotW responses need not repeat unchanged resources (xDS: all but LDS and CDS). */
function partialAllowed(typeUrl: string): boolean {
  return typeUrl === ENDPOINT || typeUrl === ROUTE;
}

/**
 * What the stream keeps per type besides the protocol state (StreamState): one record, made when
 * the type is first answered, so a stream holds one small object per type rather than an entry in
 * several maps.
 */
interface TypeView {
  readonly generator: ResourceGenerator | undefined;
  /** This stream's hold on its view of the generator; its key follows config changes. */
  readonly hold: ViewHold | undefined;
  /**
   * The subscription as a response-cache key, recomputed when the subscription changes; undefined
   * for one name or none, whose key each build makes afresh (short-lived, where a kept string
   * per stream and type would outlive a scavenge).
   */
  subKey: string | undefined;
  /** typeKey(kind, type), computed once. */
  readonly typeKey: string;
  /** What the last full response held (undefined before any response). */
  sentFull: readonly EncodedResource[] | undefined;
  /** Resources sent by partial responses since the last full one (most streams never get one). */
  sentSince: Map<string, EncodedResource> | undefined;
}

export class SotwConnection implements AdsStream, PumpTarget {
  readonly connectedAt = isoNow();
  peerIdentity: string | undefined;
  readonly state = new StreamState();
  readonly api = 'sotw';
  private proxyInfo: Proxy | undefined;
  private nonceCounter = 0;
  private readonly views = new Map<string, TypeView>();
  /** A CDS or EDS response kept removed resources (make-before-break): clean up once LDS/RDS went out. */
  private retained = false;
  readonly pump: StreamPump;

  constructor(
    readonly id: string,
    readonly peer: string,
    private readonly deps: StreamDeps,
    private readonly call: StreamCall,
  ) {
    // The connection is its own pump target: no adapter object and closures kept per stream.
    this.pump = new StreamPump(deps.limiter, this);
  }

  get proxy(): Proxy | undefined {
    return this.proxyInfo;
  }

  handleRequest(bytes: Buffer): void {
    const max = this.deps.limits.maxNamesPerType;
    const req = readBoundedRequest(bytes, max, readPlainRequest, SOTW_FIELDS, decodeDiscoveryRequest);
    if (!this.proxyInfo && req.node) {
      // Parsed once: the admission checks and the stream read the same proxy.
      const proxy = firstProxy(req.node);
      this.call.admit?.(proxy);
      this.proxyInfo = proxy;
    }
    if (!req.typeUrl)
      throw new StreamError(GrpcStatus.INVALID_ARGUMENT, 'DiscoveryRequest.type_url is required on ADS');
    this.proxyInfo ??= firstProxy(req.node);
    if (req.typeUrl === HEALTH_INFO) {
      this.deps.observer.healthReported?.(this, healthReport(req.errorDetail));
      return;
    }
    this.deps.observer.request?.(this, req.typeUrl);
    const outcome = this.state.onRequest(req);
    if (outcome.action === 'ignore') {
      this.deps.logger.debug(this.requestLog(req), 'ignoring request with stale nonce');
      return;
    }
    if (outcome.action === 'nack') {
      const log = this.requestLog(req);
      this.deps.logger.warn({ ...log, error: req.errorDetail?.message }, 'client rejected config (NACK)');
      this.deps.observer.nack?.(this, {
        typeUrl: req.typeUrl,
        type: log.type,
        nonce: req.responseNonce,
        code: req.errorDetail?.code ?? 0,
        message: req.errorDetail?.message ?? '',
      });
    }
    if (!outcome.respond) return;
    this.typeView(req.typeUrl).subKey = this.subscriptionKey(req.typeUrl);
    const sub = this.state.subscription(req.typeUrl);
    // The state replaces a type's name set when the subscription changes, never edits it: shared.
    if (sub)
      this.deps.subscriptions.update(this, this.proxyInfo.kind, req.typeUrl, sub.names, sub.wildcard, true);
    this.pump.mark(req.typeUrl, { force: true, full: true });
    this.pump.kick();
  }

  /** The fields a log line about a request carries (built only when one is written). */
  private requestLog(req: DiscoveryRequest): { conn: string; node: string; type: string; nonce: string } {
    return {
      conn: this.id,
      node: this.proxyInfo?.id ?? '',
      type: shortTypeName(req.typeUrl),
      nonce: req.responseNonce,
    };
  }

  /** Marks what `changes` touched for this stream; returns whether anything was. */
  onChange(changes: ChangeSet, round: PushRound): boolean {
    const proxy = this.proxyInfo;
    if (!proxy) return false;
    let touched = false;
    if (changes.all) {
      for (const typeUrl of this.state.watchedTypes()) {
        if (!this.typeView(typeUrl).generator) continue;
        this.pump.mark(typeUrl, { full: true });
        touched = true;
      }
    } else if (changes.moved) {
      // This stream's view of a type moved: what it holds of that type is built there anew.
      for (const [typeUrl, view] of this.views) {
        if (!view.hold || !changes.moved.has(view.hold) || !this.state.subscription(typeUrl)) continue;
        this.pump.mark(typeUrl, { full: true });
        touched = true;
      }
    }
    // Only the types that changed, and only this stream's kind: this runs per stream per push.
    for (const c of changes.types) {
      if (c.kind !== proxy.kind) continue;
      const sub = this.state.subscription(c.typeUrl);
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
      for (const n of c.names) if (sub.names.has(n) || all?.has(n)) (hit ??= []).push(n);
      if (!hit) continue;
      touched = true;
      if (partialAllowed(c.typeUrl)) this.pump.mark(c.typeUrl, { names: hit });
      else this.pump.mark(c.typeUrl, { full: true });
    }
    // Names it asked for that did not exist may exist now, if their host changed.
    if (changes.hosts && changes.hosts.size > 0) {
      for (const typeUrl of this.state.watchedTypes()) {
        const names = this.deps.subscriptions.missingUnder(this, proxy.kind, typeUrl, changes.hosts);
        if (names.length === 0 || !this.typeView(typeUrl).generator) continue;
        touched = true;
        if (partialAllowed(typeUrl)) this.pump.mark(typeUrl, { names });
        else this.pump.mark(typeUrl, { full: true });
      }
    }
    if (touched) {
      this.pump.join(round);
      this.pump.kick();
    }
    return touched;
  }

  close(): void {
    this.pump.close();
    for (const view of this.views.values()) view.hold?.release();
  }

  typeStatus(): readonly TypeStatus[] {
    // Read for every closing stream's history row: plain assignments, no spread objects.
    const out: TypeStatus[] = [];
    for (const [typeUrl, t] of this.state.types()) {
      const status: { -readonly [K in keyof TypeStatus]: TypeStatus[K] } = {
        typeUrl,
        sentVersion: t.sent?.version ?? '',
        sentNonce: t.sent?.nonce ?? '',
      };
      if (t.sent) status.sentAt = t.sent.at;
      if (t.ackedVersion && t.ackedAt)
        status.acked = { version: t.ackedVersion, nonce: t.ackedNonce ?? '', at: t.ackedAt };
      if (t.nack) status.nack = t.nack;
      out.push(status);
    }
    return out;
  }

  /** Resources as last sent per type: the last full response, updated by partial ones since. */
  heldResources(typeUrl: string): readonly EncodedResource[] {
    const sent = this.views.get(typeUrl);
    const full = sent?.sentFull ?? [];
    if (!sent?.sentSince) return full;
    const merged = new Map(full.map((r) => [r.name, r]));
    for (const [n, r] of sent.sentSince) merged.set(n, r);
    return [...merged.values()];
  }

  private typeView(typeUrl: string): TypeView {
    let v = this.views.get(typeUrl);
    if (!v) {
      const proxy = this.proxyInfo;
      const generator = proxy && this.deps.generators.find(proxy.kind, typeUrl);
      v = {
        generator,
        hold: proxy && generator ? this.deps.cache.retain(generator, proxy) : undefined,
        subKey: undefined,
        typeKey: typeKey(proxy?.kind ?? 'grpc', typeUrl),
        sentFull: undefined,
        sentSince: undefined,
      };
      this.views.set(typeUrl, v);
    }
    return v;
  }

  private subscriptionKey(typeUrl: string): string | undefined {
    const sub = this.state.subscription(typeUrl);
    if (!sub) return '';
    return sub.wildcard || sub.names.size > 1 ? subscriptionKey(sub.wildcard, sub.names) : undefined;
  }

  /** PumpTarget: the response for `typeUrl` now, or undefined when there is nothing to send. */
  build(typeUrl: string, work: PendingWork): OutgoingMessage | undefined {
    const proxy = this.proxyInfo;
    const sub = this.state.subscription(typeUrl);
    if (!proxy || !sub) return undefined;
    const started = performance.now();
    const view = this.typeView(typeUrl);
    const { generator } = view;
    const cache = this.deps.cache;
    const tk = view.typeKey;
    const epoch = cache.epochOf(tk);
    let response: SharedResponse;
    let partial = false;
    if (!work.full && !work.force && partialAllowed(typeUrl) && generator) {
      const names =
        work.names.size === 1 ? [...work.names] : [...work.names].filter((n) => sub.names.has(n)).sort();
      if (names.length === 1 && !sub.names.has(names[0] ?? '')) return undefined;
      if (names.length === 0) return undefined;
      partial = true;
      response = this.deps.responses.get(
        tk,
        epoch,
        `${view.hold?.key ?? ''}\0p\0${names.length === 1 ? names[0] : subscriptionKey(false, names)}`,
        typeUrl,
        () => present(names.map((n) => cache.get(generator, proxy, n, view.hold?.key))),
      );
      this.noteMissing(typeUrl, names, response.names);
      if (response.resources.length === 0) return undefined;
    } else {
      const key = `${view.hold?.key ?? ''}\0${view.subKey ?? subscriptionKey(false, sub.names)}`;
      response =
        this.deps.responses.lookup(tk, epoch, key) ??
        this.deps.responses.get(tk, epoch, key, typeUrl, () => this.collect(view, proxy, sub));
      this.noteMissing(typeUrl, sub.names, response.names, true);
      response = this.makeBeforeBreak(typeUrl, response);
    }
    if (!partial && !this.state.shouldSend(typeUrl, response.version, work.force)) return undefined;
    if (partial && this.state.typeState(typeUrl)?.nack?.version === response.version) return undefined;
    // Read before remember() replaces what was held; only Envoy's CDS needs it (no array otherwise).
    const rewarm =
      typeUrl === CLUSTER && proxy.kind === 'envoy'
        ? updatedNames(this.heldResources(CLUSTER), response.resources)
        : undefined;
    const nonce = `${++this.nonceCounter}`;
    // The shared body and this stream's nonce: the writer frames them together, and a large body
    // goes out uncopied (message-writer.ts).
    const message = { body: response.body, nonce };
    this.state.recordSent(typeUrl, {
      version: response.version,
      nonce,
      names: response.names,
      at: isoNow(),
    });
    this.remember(view, response.resources, partial);
    // Envoy re-warms every updated cluster and waits for its load assignment: follow CDS with the
    // EDS of the clusters that changed, even if unchanged, or such a cluster stays warming.
    if (rewarm) {
      const eds = this.state.subscription(ENDPOINT);
      const again = rewarm.filter((n) => eds?.names.has(n));
      if (again.length > 0) this.pump.mark(ENDPOINT, { names: again });
    }
    this.deps.observer.responseSent?.(this, {
      typeUrl,
      type: shortTypeName(typeUrl),
      resources: response.resources.length,
      bytes: response.body.length + nonceFieldLength(nonce),
      buildMs: performance.now() - started,
    });
    return message;
  }

  /** Every resource of the subscription that exists for this proxy (a whole SotW response). */
  private collect(
    view: TypeView,
    proxy: Proxy,
    sub: { readonly wildcard: boolean; readonly names: ReadonlySet<string> },
  ): EncodedResource[] {
    const { generator } = view;
    if (!generator) return [];
    const cache = this.deps.cache;
    const names = new Set(sub.names);
    const key = view.hold?.key;
    if (sub.wildcard) for (const n of cache.wildcardNames(generator, proxy, key).names) names.add(n);
    return present([...names].map((n) => cache.get(generator, proxy, n, key)));
  }

  /**
   * Records which of `asked` the answer lacks (they do not exist for this proxy), so a change of
   * their host re-evaluates them; with `whole`, `asked` is the entire subscription and names no
   * longer asked for are forgotten.
   */
  private noteMissing(
    typeUrl: string,
    asked: readonly string[] | ReadonlySet<string>,
    answered: readonly string[],
    whole = false,
  ): void {
    const proxy = this.proxyInfo;
    if (!proxy) return;
    const index = this.deps.subscriptions;
    const before = index.missingNames(this, proxy.kind, typeUrl);
    // The usual answer holds the one name asked for, and nothing was missing: nothing to record.
    if (before.size === 0 && answered.length === 1 && sizeOf(asked) === 1) {
      for (const n of asked) if (n === answered[0]) return;
    }
    const wanted = [...asked];
    if (wanted.length === 0 && before.size === 0) return;
    const got = new Set(answered);
    const now = new Set<string>();
    for (const n of wanted) if (!got.has(n)) now.add(n);
    const drop = whole
      ? [...before.keys()].filter((n) => !now.has(n))
      : wanted.filter((n) => got.has(n) && before.has(n));
    for (const n of drop) index.setMissing(this, proxy.kind, typeUrl, n, false);
    for (const n of now) index.setMissing(this, proxy.kind, typeUrl, n, true);
  }

  /**
   * A cluster (or its load assignment) that disappeared stays in the response while this stream
   * still has listeners or routes to re-evaluate that may name it; it goes once they went out.
   */
  private makeBeforeBreak(typeUrl: string, response: SharedResponse): SharedResponse {
    if (typeUrl !== CLUSTER && typeUrl !== ENDPOINT) return response;
    if (!this.pump.has(LISTENER) && !this.pump.has(ROUTE)) return response;
    const before = this.heldResources(typeUrl);
    if (before.length === 0) return response;
    const now = new Set(response.resources.map((r) => r.name));
    const sub = this.state.subscription(typeUrl);
    const kept = before.filter((r) => !now.has(r.name) && (sub?.wildcard || sub?.names.has(r.name)));
    if (kept.length === 0) return response;
    this.retained = true;
    return ownResponse(typeUrl, [...response.resources, ...kept]);
  }

  private remember(view: TypeView, resources: readonly EncodedResource[], partial: boolean): void {
    if (!partial) {
      // Most streams never get a partial response: the map of them is made on the first.
      view.sentFull = resources;
      view.sentSince = undefined;
      return;
    }
    view.sentFull ??= [];
    const since = (view.sentSince ??= new Map());
    for (const r of resources) since.set(r.name, r);
  }

  /** PumpTarget: hands `message` to the call; `drained` runs once gRPC has taken it. */
  write(message: OutgoingMessage, drained: () => void): void {
    this.call.send(message, drained);
  }

  /** PumpTarget: nothing is pending or in flight any more. */
  idle(): void {
    if (!this.retained) return;
    this.retained = false;
    if (this.state.subscription(CLUSTER)) this.pump.mark(CLUSTER, { full: true });
    if (this.state.subscription(ENDPOINT)) this.pump.mark(ENDPOINT, { full: true });
  }
}

/** Names in `next` that are new or whose bytes differ from `before`. */
function updatedNames(before: readonly EncodedResource[], next: readonly EncodedResource[]): string[] {
  const old = new Map(before.map((r) => [r.name, r.version]));
  return next.filter((r) => old.get(r.name) !== r.version).map((r) => r.name);
}

function sizeOf(names: readonly string[] | ReadonlySet<string>): number {
  return 'size' in names ? names.size : names.length;
}

function present(list: readonly (EncodedResource | undefined)[]): EncodedResource[] {
  return list.filter((r): r is EncodedResource => r !== undefined);
}
