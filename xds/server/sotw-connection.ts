// One state-of-the-world ADS stream on the shared core (stream-core.ts): reads requests into the SotW
// protocol state (xds/protocol/sotw-state.ts) and builds whole or partial responses, with resources
// and whole response bodies from the shared caches.
import type { Proxy } from '../proxy/proxy.js';
import { readBoundedRequest, type TypeStatus } from './ads-stream.js';
import { readPlainRequest, SOTW_FIELDS } from '../protocol/request-reader.js';
import type { EncodedResource } from '../proto/resource.js';
import { ownResponse, type SharedResponse } from './response-cache.js';
import type { PendingWork } from './stream-pump.js';
import { StreamState } from '../protocol/sotw-state.js';
import { CLUSTER, ENDPOINT, ROUTE, shortTypeName } from '../proto/type-urls.js';
import { decodeDiscoveryRequest, nonceFieldLength, type DiscoveryRequest } from '../proto/wire.js';
import type { Subscription } from './observer.js';
import { StreamCore, type Built, type TypeView } from './stream-core.js';
import { subscriptionKey } from './subscription-key.js';
import { isoNow } from '../protocol/wall-clock.js';

/** Types whose SotW responses need not repeat unchanged resources (xDS: all but LDS and CDS). */
function partialAllowed(typeUrl: string): boolean {
  return typeUrl === ENDPOINT || typeUrl === ROUTE;
}

/** What a SotW stream keeps per type besides the protocol state: one small object per type. */
interface SotwView extends TypeView {
  /**
   * The subscription as a response-cache key, recomputed when the subscription changes; undefined
   * for one name or none, whose key each build makes afresh (short-lived, where a kept string
   * per stream and type would outlive a scavenge).
   */
  subKey: string | undefined;
  /** What the last full response held (undefined before any response). */
  sentFull: readonly EncodedResource[] | undefined;
  /** Resources sent by partial responses since the last full one (most streams never get one). */
  sentSince: Map<string, EncodedResource> | undefined;
}

export class SotwConnection extends StreamCore<DiscoveryRequest, SotwView> {
  readonly state = new StreamState();
  readonly api = 'sotw';
  protected readonly requestName = 'DiscoveryRequest';

  protected read(bytes: Buffer, max: number): DiscoveryRequest {
    return readBoundedRequest(bytes, max, readPlainRequest, SOTW_FIELDS, decodeDiscoveryRequest);
  }

  protected apply(req: DiscoveryRequest, proxy: Proxy): void {
    const outcome = this.state.onRequest(req);
    if (outcome.action === 'ignore') {
      this.deps.logger.debug(
        { conn: this.id, node: proxy.id, type: shortTypeName(req.typeUrl), nonce: req.responseNonce },
        'ignoring request with stale nonce',
      );
      return;
    }
    if (outcome.action === 'nack') this.rejected(req, req.responseNonce);
    if (outcome.action !== 'initial') this.answered(req.typeUrl, req.responseNonce);
    if (!outcome.respond) return;
    this.typeView(req.typeUrl).subKey = this.subscriptionKey(req.typeUrl);
    const sub = this.state.subscription(req.typeUrl);
    // The state replaces a type's name set when the subscription changes, never edits it: shared.
    if (sub) this.deps.subscriptions.update(this, proxy.kind, req.typeUrl, sub.names, sub.wildcard, true);
    this.want(req.typeUrl, { force: true, full: true });
  }

  subscription(typeUrl: string): Subscription | undefined {
    return this.state.subscription(typeUrl);
  }

  protected watchedTypes(): Iterable<string> {
    return this.state.watchedTypes();
  }

  protected partial(typeUrl: string): boolean {
    return partialAllowed(typeUrl);
  }

  protected makeView(base: TypeView): SotwView {
    // Every field spelled out, not spread from `base`: with the spread, making the views allocated
    // 981 bytes per response of a 2,000-stream storm against 229 spelled out (V8's allocation
    // sampling), and each view lives as long as its stream.
    return {
      generator: base.generator,
      hold: base.hold,
      typeKey: base.typeKey,
      subKey: undefined,
      sentFull: undefined,
      sentSince: undefined,
    };
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
      const g = this.generationOf(typeUrl, t.nack !== undefined);
      if (g.sent !== undefined) status.sentGeneration = g.sent;
      if (g.nack !== undefined) status.nackGeneration = g.nack;
      out.push(status);
    }
    return out;
  }

  /** Resources as last sent per type: the last full response, updated by partial ones since. */
  heldResources(typeUrl: string): readonly EncodedResource[] {
    const sent = this.viewOf(typeUrl);
    const full = sent?.sentFull ?? [];
    if (!sent?.sentSince) return full;
    const merged = new Map(full.map((r) => [r.name, r]));
    for (const [n, r] of sent.sentSince) merged.set(n, r);
    return [...merged.values()];
  }

  private subscriptionKey(typeUrl: string): string | undefined {
    const sub = this.state.subscription(typeUrl);
    if (!sub) return '';
    return sub.wildcard || sub.names.size > 1 ? subscriptionKey(sub.wildcard, sub.names) : undefined;
  }

  protected respond(
    typeUrl: string,
    work: PendingWork,
    view: SotwView,
    proxy: Proxy,
    again: ReadonlySet<string> | undefined,
  ): Built | undefined {
    const sub = this.state.subscription(typeUrl);
    if (!sub) return undefined;
    const { generator } = view;
    const cache = this.deps.cache;
    const tk = view.typeKey;
    const epoch = cache.epochOf(tk);
    let response: SharedResponse;
    let partial = false;
    if (!work.full && !work.force && partialAllowed(typeUrl) && generator) {
      // Names to send again (re-warm) were marked as work: they are among work.names.
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
      this.noteMissing(typeUrl, proxy, names, response.names);
      if (response.resources.length === 0) return undefined;
    } else {
      const key = `${view.hold?.key ?? ''}\0${view.subKey ?? subscriptionKey(false, sub.names)}`;
      response =
        this.deps.responses.lookup(tk, epoch, key) ??
        this.deps.responses.get(tk, epoch, key, typeUrl, () => this.collect(view, proxy, sub));
      this.noteMissing(typeUrl, proxy, sub.names, response.names, true);
      response = this.keepRemoved(typeUrl, sub, response);
    }
    // A whole response unchanged since the last goes out only when forced, or to re-warm.
    const force = work.force || again !== undefined;
    if (!partial && !this.state.shouldSend(typeUrl, response.version, force)) return undefined;
    if (partial && this.state.typeState(typeUrl)?.nack?.version === response.version) return undefined;
    // Read before remember() replaces what was held; only CDS to a client that warms needs it.
    const warm =
      typeUrl === CLUSTER && this.warms ? changed(this.heldResources(CLUSTER), response) : undefined;
    const nonce = this.nextNonce();
    this.state.recordSent(typeUrl, {
      version: response.version,
      nonce,
      names: response.names,
      at: isoNow(),
    });
    remember(view, response.resources, partial);
    return {
      // The shared body and this stream's nonce: the writer frames them together, and a large body
      // goes out uncopied (message-writer.ts).
      message: { body: response.body, nonce },
      nonce,
      resources: response.resources.length,
      bytes: response.body.length + nonceFieldLength(nonce),
      ...(warm && { warm }),
    };
  }

  /** Every resource of the subscription that exists for this proxy (a whole SotW response). */
  private collect(view: SotwView, proxy: Proxy, sub: Subscription): EncodedResource[] {
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
    proxy: Proxy,
    asked: readonly string[] | ReadonlySet<string>,
    answered: readonly string[],
    whole = false,
  ): void {
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

  /** Make-before-break: what disappeared stays in a CDS or EDS response while LDS or RDS are pending. */
  private keepRemoved(typeUrl: string, sub: Subscription, response: SharedResponse): SharedResponse {
    if (!this.order.keepsRemovals(typeUrl)) return response;
    const before = this.heldResources(typeUrl);
    if (before.length === 0) return response;
    const now = new Set(response.resources.map((r) => r.name));
    const kept = before.filter((r) => !now.has(r.name) && (sub.wildcard || sub.names.has(r.name)));
    if (kept.length === 0) return response;
    this.order.keptRemoved();
    return ownResponse(typeUrl, [...response.resources, ...kept]);
  }
}

function remember(view: SotwView, resources: readonly EncodedResource[], partial: boolean): void {
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

/** Clusters in `next` that are new or whose bytes differ from `before`, and how many are new. */
function changed(
  before: readonly EncodedResource[],
  next: SharedResponse,
): { updated: string[]; added: number } {
  const old = new Map(before.map((r) => [r.name, r.version]));
  const updated: string[] = [];
  let added = 0;
  for (const r of next.resources) {
    const was = old.get(r.name);
    if (was === r.version) continue;
    updated.push(r.name);
    if (was === undefined) added += 1;
  }
  return { updated, added };
}

function sizeOf(names: readonly string[] | ReadonlySet<string>): number {
  return 'size' in names ? names.size : names.length;
}

function present(list: readonly (EncodedResource | undefined)[]): EncodedResource[] {
  return list.filter((r): r is EncodedResource => r !== undefined);
}
