// One incremental (delta) ADS stream on the shared core (stream-core.ts): sends only resources whose
// version (the hash of their bytes) differs from what the client holds, and names removed ones in
// removed_resources, following the delta protocol state (xds/protocol/delta-state.ts).
import { checkNamesSubscribed, readBoundedRequest, type TypeStatus } from './ads-stream.js';
import { DeltaStreamState } from '../protocol/delta-state.js';
import { DELTA_FIELDS, readPlainDeltaRequest } from '../protocol/request-reader.js';
import type { Proxy } from '../proxy/proxy.js';
import type { EncodedResource } from '../proto/resource.js';
import type { PendingWork } from './stream-pump.js';
import { CLUSTER } from '../proto/type-urls.js';
import {
  decodeDeltaDiscoveryRequest,
  encodeDeltaDiscoveryResponse,
  type DeltaDiscoveryRequest,
} from '../proto/wire.js';
import type { Subscription } from './observer.js';
import { StreamCore, type Built, type TypeView } from './stream-core.js';

export class DeltaConnection extends StreamCore<DeltaDiscoveryRequest, TypeView> {
  readonly state = new DeltaStreamState();
  readonly api = 'delta';
  protected readonly requestName = 'DeltaDiscoveryRequest';

  protected read(bytes: Buffer, max: number): DeltaDiscoveryRequest {
    return readBoundedRequest(bytes, max, readPlainDeltaRequest, DELTA_FIELDS, decodeDeltaDiscoveryRequest);
  }

  protected apply(req: DeltaDiscoveryRequest, proxy: Proxy): void {
    const max = this.deps.limits.maxNamesPerType;
    const outcome = this.state.onRequest(req);
    if (outcome.action === 'nack') this.rejected(req, outcome.nonce);
    if (outcome.action !== 'subscribe') this.answered(req.typeUrl, outcome.nonce);
    const { added, wildcardEntered, first } = outcome.changed;
    const t = this.state.type(req.typeUrl);
    // initial_resource_versions may name resources the stream does not subscribe to: bounded too.
    if (t) checkNamesSubscribed(Math.max(t.names.size, t.known.size), max, req.typeUrl);
    if (t && (first || req.subscribe.length > 0 || req.unsubscribe.length > 0))
      this.deps.subscriptions.update(this, proxy.kind, req.typeUrl, t.names, t.wildcard);
    for (const n of req.unsubscribe)
      this.deps.subscriptions.setMissing(this, proxy.kind, req.typeUrl, n, false);
    if (first || wildcardEntered) this.want(req.typeUrl, { full: true, force: first });
    else if (added.length > 0) this.want(req.typeUrl, { names: added, force: true });
  }

  subscription(typeUrl: string): Subscription | undefined {
    return this.state.type(typeUrl);
  }

  protected watchedTypes(): Iterable<string> {
    return this.state.watchedTypes();
  }

  /** Delta sends what changed, whatever the type. */
  protected partial(): boolean {
    return true;
  }

  protected override holdsName(typeUrl: string, name: string): boolean {
    return this.state.type(typeUrl)?.known.has(name) ?? false;
  }

  protected makeView(base: TypeView): TypeView {
    return base;
  }

  typeStatus(): readonly TypeStatus[] {
    return this.state.watchedTypes().map((typeUrl) => {
      const t = this.state.type(typeUrl);
      const g = this.generationOf(typeUrl, t?.nack !== undefined);
      return {
        typeUrl,
        sentVersion: t?.lastNonce ?? '',
        sentNonce: t?.lastNonce ?? '',
        ...(t?.lastSentAt && { sentAt: t.lastSentAt }),
        ...(t?.ackedNonce &&
          t.ackedAt && { acked: { version: t.ackedNonce, nonce: t.ackedNonce, at: t.ackedAt } }),
        ...(t?.nack && { nack: t.nack }),
        ...(g.sent !== undefined && { sentGeneration: g.sent }),
        ...(g.nack !== undefined && { nackGeneration: g.nack }),
      };
    });
  }

  /** The resources the client holds now, per our record. */
  heldResources(typeUrl: string): readonly EncodedResource[] {
    const t = this.state.type(typeUrl);
    const proxy = this.proxy;
    if (!t || !proxy) return [];
    const { generator, hold } = this.typeView(typeUrl);
    if (!generator) return [];
    const out: EncodedResource[] = [];
    for (const name of t.known.keys()) {
      const r = this.deps.cache.get(generator, proxy, name, hold?.key);
      if (r && r.version === t.known.get(name)) out.push(r);
    }
    return out;
  }

  protected respond(
    typeUrl: string,
    work: PendingWork,
    view: TypeView,
    proxy: Proxy,
    again: ReadonlySet<string> | undefined,
  ): Built | undefined {
    const t = this.state.type(typeUrl);
    if (!t) return undefined;
    const { generator } = view;
    const cache = this.deps.cache;
    const key = view.hold?.key;
    const wildcard = generator && t.wildcard ? cache.wildcardNames(generator, proxy, key).set : undefined;
    const wanted = (n: string): boolean => t.names.has(n) || (wildcard?.has(n) ?? false);
    const candidates = new Set<string>();
    if (work.full) {
      for (const n of t.names) candidates.add(n);
      for (const n of wildcard ?? []) candidates.add(n);
      for (const n of t.known.keys()) candidates.add(n);
    } else for (const n of work.names) candidates.add(n);
    for (const n of again ?? []) candidates.add(n);
    const keepRemovals = this.order.keepsRemovals(typeUrl);
    const resources: EncodedResource[] = [];
    const removed: string[] = [];
    for (const name of candidates) {
      const r = generator && wanted(name) ? cache.get(generator, proxy, name, key) : undefined;
      // A name it asked for that does not exist is re-evaluated when its host changes.
      if (t.names.has(name)) this.deps.subscriptions.setMissing(this, proxy.kind, typeUrl, name, !r);
      const held = t.known.get(name);
      if (r) {
        if (held !== r.version || again?.has(name)) resources.push(r);
      } else if (held !== undefined && held !== '') {
        // Make-before-break: the client keeps it while its listeners or routes may still name it.
        if (keepRemovals) this.order.keptRemoved();
        else removed.push(name);
      } else if (held === undefined && wanted(name) && t.names.has(name)) {
        // Tell a client that asked for a name which does not exist, once.
        removed.push(name);
      }
    }
    if (resources.length === 0 && removed.length === 0 && !work.force) return undefined;
    let warm: Built['warm'];
    if (typeUrl === CLUSTER && this.warms) {
      let added = 0;
      for (const r of resources) if (!t.known.get(r.name)) added += 1;
      warm = { updated: resources.map((r) => r.name), added };
    }
    const nonce = this.nextNonce();
    const bytes = encodeDeltaDiscoveryResponse({ systemVersion: '', resources, removed, typeUrl, nonce });
    for (const r of resources) t.known.set(r.name, r.version);
    for (const n of removed) {
      if (t.names.has(n)) t.known.set(n, '');
      else t.known.delete(n);
    }
    this.state.recordSent(typeUrl, nonce);
    return { message: bytes, nonce, resources: resources.length, bytes: bytes.length, ...(warm && { warm }) };
  }
}
