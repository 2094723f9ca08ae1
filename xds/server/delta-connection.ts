// One incremental (delta) ADS stream: sends only resources whose version (the hash of their bytes)
// differs from what the client holds, and names removed ones in removed_resources. Shares the
// caches, the pump and the make-before-break rule with the SotW connection.
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ResourceGenerator } from '../generators/generator.js';
import {
  readBoundedRequest,
  checkNamesSubscribed,
  firstProxy,
  StreamError,
  type AdsStream,
  type StreamCall,
  type StreamDeps,
  type TypeStatus,
} from './ads-stream.js';
import { healthReport } from './health-report.js';
import { DeltaStreamState } from '../protocol/delta-state.js';
import type { Proxy } from '../proxy/proxy.js';
import { DELTA_FIELDS, readPlainDeltaRequest } from '../protocol/request-reader.js';
import { wildcardKey, type ChangeSet, type ViewHold } from './resource-cache.js';
import type { EncodedResource } from '../proto/resource.js';
import { StreamPump, type PendingWork, type PushRound } from './stream-pump.js';
import { CLUSTER, ENDPOINT, HEALTH_INFO, LISTENER, ROUTE, shortTypeName } from '../proto/type-urls.js';
import { decodeDeltaDiscoveryRequest, encodeDeltaDiscoveryResponse } from '../proto/wire.js';
import { isoNow } from '../protocol/wall-clock.js';

export class DeltaConnection implements AdsStream {
  readonly connectedAt = isoNow();
  peerIdentity: string | undefined;
  readonly state = new DeltaStreamState();
  readonly api = 'delta';
  private proxyInfo: Proxy | undefined;
  private nonceCounter = 0;
  private readonly generators = new Map<string, ResourceGenerator | undefined>();
  /** Names to send again even if unchanged (load assignments of clusters just re-sent: warming). */
  private readonly resend = new Map<string, Set<string>>();
  private retained = false;
  /** This stream's holds on its cache views per type (ResourceCache.retain): keys follow the config. */
  private readonly holds = new Map<string, ViewHold>();
  readonly pump: StreamPump;

  constructor(
    readonly id: string,
    readonly peer: string,
    private readonly deps: StreamDeps,
    private readonly call: StreamCall,
  ) {
    this.pump = new StreamPump(deps.limiter, {
      build: (typeUrl, work) => this.build(typeUrl, work),
      write: (bytes, drained) => this.call.send(bytes, drained),
      idle: () => this.idle(),
    });
  }

  get proxy(): Proxy | undefined {
    return this.proxyInfo;
  }

  handleRequest(bytes: Buffer): void {
    const max = this.deps.limits.maxNamesPerType;
    const req = readBoundedRequest(
      bytes,
      max,
      readPlainDeltaRequest,
      DELTA_FIELDS,
      decodeDeltaDiscoveryRequest,
    );
    if (!this.proxyInfo && req.node) {
      // Parsed once: the admission checks and the stream read the same proxy.
      const proxy = firstProxy(req.node);
      this.call.admit?.(proxy);
      this.proxyInfo = proxy;
    }
    if (!req.typeUrl)
      throw new StreamError(GrpcStatus.INVALID_ARGUMENT, 'DeltaDiscoveryRequest.type_url is required on ADS');
    this.proxyInfo ??= firstProxy(req.node);
    if (req.typeUrl === HEALTH_INFO) {
      this.deps.observer.healthReported?.(this, healthReport(req.errorDetail));
      return;
    }
    this.deps.observer.request?.(this, req.typeUrl);
    const outcome = this.state.onRequest(req);
    if (outcome.action === 'nack') {
      this.deps.logger.warn(
        {
          conn: this.id,
          node: this.proxyInfo.id,
          type: shortTypeName(req.typeUrl),
          nonce: outcome.nonce,
          error: req.errorDetail?.message,
        },
        'client rejected config (NACK)',
      );
      this.deps.observer.nack?.(this, {
        typeUrl: req.typeUrl,
        type: shortTypeName(req.typeUrl),
        nonce: outcome.nonce,
        code: req.errorDetail?.code ?? 0,
        message: req.errorDetail?.message ?? '',
      });
    }
    const { added, wildcardEntered, first } = outcome.changed;
    const t = this.state.type(req.typeUrl);
    // initial_resource_versions may name resources the stream does not subscribe to: bounded too.
    if (t) checkNamesSubscribed(Math.max(t.names.size, t.known.size), max, req.typeUrl);
    if (t && (first || req.subscribe.length > 0 || req.unsubscribe.length > 0))
      this.deps.subscriptions.update(this, this.proxyInfo.kind, req.typeUrl, t.names, t.wildcard);
    for (const n of req.unsubscribe)
      this.deps.subscriptions.setMissing(this, this.proxyInfo.kind, req.typeUrl, n, false);
    if (first || wildcardEntered) this.pump.mark(req.typeUrl, { full: true, force: first });
    else if (added.length > 0) this.pump.mark(req.typeUrl, { names: added, force: true });
    else return;
    this.pump.kick();
  }

  onChange(changes: ChangeSet, round: PushRound): boolean {
    const proxy = this.proxyInfo;
    if (!proxy) return false;
    let touched = false;
    if (changes.all) {
      for (const typeUrl of this.state.watchedTypes()) {
        if (!this.generator(typeUrl)) continue;
        this.pump.mark(typeUrl, { full: true });
        touched = true;
      }
    } else if (changes.moved) {
      // This stream's view of a type moved: what it holds of that type is built there anew.
      for (const [typeUrl, hold] of this.holds) {
        if (!changes.moved.has(hold) || !this.state.type(typeUrl)) continue;
        this.pump.mark(typeUrl, { full: true });
        touched = true;
      }
    }
    for (const c of changes.types) {
      if (c.kind !== proxy.kind) continue;
      const t = this.state.type(c.typeUrl);
      const generator = this.generator(c.typeUrl);
      if (!t || !generator) continue;
      if (
        t.wildcard &&
        changes.wildcards.has(wildcardKey(proxy.kind, c.typeUrl, this.holds.get(c.typeUrl)?.key ?? ''))
      ) {
        this.pump.mark(c.typeUrl, { full: true });
        touched = true;
        continue;
      }
      const key = this.holds.get(c.typeUrl)?.key;
      const all = t.wildcard ? this.deps.cache.wildcardNames(generator, proxy, key).set : undefined;
      let hit: string[] | undefined;
      for (const n of c.names) if (t.names.has(n) || all?.has(n) || t.known.has(n)) (hit ??= []).push(n);
      if (!hit) continue;
      this.pump.mark(c.typeUrl, { names: hit });
      touched = true;
    }
    // Names it asked for that did not exist may exist now, if their host changed.
    if (changes.hosts && changes.hosts.size > 0) {
      for (const typeUrl of this.state.watchedTypes()) {
        const names = this.deps.subscriptions.missingUnder(this, proxy.kind, typeUrl, changes.hosts);
        if (names.length === 0 || !this.generator(typeUrl)) continue;
        this.pump.mark(typeUrl, { names });
        touched = true;
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
    for (const hold of this.holds.values()) hold.release();
  }

  typeStatus(): readonly TypeStatus[] {
    return this.state.watchedTypes().map((typeUrl) => {
      const t = this.state.type(typeUrl);
      return {
        typeUrl,
        sentVersion: t?.lastNonce ?? '',
        sentNonce: t?.lastNonce ?? '',
        ...(t?.lastSentAt && { sentAt: t.lastSentAt }),
        ...(t?.ackedNonce &&
          t.ackedAt && { acked: { version: t.ackedNonce, nonce: t.ackedNonce, at: t.ackedAt } }),
        ...(t?.nack && { nack: t.nack }),
      };
    });
  }

  /** The resources the client holds now, per our record. */
  heldResources(typeUrl: string): readonly EncodedResource[] {
    const t = this.state.type(typeUrl);
    const generator = this.generator(typeUrl);
    const proxy = this.proxyInfo;
    if (!t || !generator || !proxy) return [];
    const out: EncodedResource[] = [];
    for (const name of t.known.keys()) {
      const r = this.deps.cache.get(generator, proxy, name, this.holds.get(typeUrl)?.key);
      if (r && r.version === t.known.get(name)) out.push(r);
    }
    return out;
  }

  private generator(typeUrl: string): ResourceGenerator | undefined {
    if (!this.generators.has(typeUrl)) {
      const proxy = this.proxyInfo;
      const generator = proxy && this.deps.generators.find(proxy.kind, typeUrl);
      this.generators.set(typeUrl, generator);
      if (proxy && generator) this.holds.set(typeUrl, this.deps.cache.retain(generator, proxy));
    }
    return this.generators.get(typeUrl);
  }

  private build(typeUrl: string, work: PendingWork): Buffer | undefined {
    const proxy = this.proxyInfo;
    const t = this.state.type(typeUrl);
    const generator = this.generator(typeUrl);
    if (!proxy || !t) return undefined;
    const started = performance.now();
    const cache = this.deps.cache;
    const key = this.holds.get(typeUrl)?.key;
    const wildcard = generator && t.wildcard ? cache.wildcardNames(generator, proxy, key).set : undefined;
    const wanted = (n: string): boolean => t.names.has(n) || (wildcard?.has(n) ?? false);
    const again = this.resend.get(typeUrl);
    this.resend.delete(typeUrl);
    const candidates = new Set<string>();
    if (work.full) {
      for (const n of t.names) candidates.add(n);
      for (const n of wildcard ?? []) candidates.add(n);
      for (const n of t.known.keys()) candidates.add(n);
    } else for (const n of work.names) candidates.add(n);
    for (const n of again ?? []) candidates.add(n);
    const holdRemovals =
      (typeUrl === CLUSTER || typeUrl === ENDPOINT) && (this.pump.has(LISTENER) || this.pump.has(ROUTE));
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
        if (holdRemovals) this.retained = true;
        else removed.push(name);
      } else if (held === undefined && wanted(name) && t.names.has(name)) {
        // Tell a client that asked for a name which does not exist, once.
        removed.push(name);
      }
    }
    if (resources.length === 0 && removed.length === 0 && !work.force) return undefined;
    const nonce = `${++this.nonceCounter}`;
    const bytes = encodeDeltaDiscoveryResponse({ systemVersion: '', resources, removed, typeUrl, nonce });
    for (const r of resources) t.known.set(r.name, r.version);
    for (const n of removed) {
      if (t.names.has(n)) t.known.set(n, '');
      else t.known.delete(n);
    }
    this.state.recordSent(typeUrl, nonce);
    if (typeUrl === CLUSTER && resources.length > 0 && this.state.type(ENDPOINT)) {
      // Envoy re-warms every updated cluster and waits for its load assignment: send it again.
      const names = this.resend.get(ENDPOINT) ?? new Set<string>();
      for (const r of resources) names.add(r.name);
      this.resend.set(ENDPOINT, names);
      this.pump.mark(ENDPOINT, { names });
    }
    this.deps.observer.responseSent?.(this, {
      typeUrl,
      type: shortTypeName(typeUrl),
      resources: resources.length,
      bytes: bytes.length,
      buildMs: performance.now() - started,
    });
    return bytes;
  }

  private idle(): void {
    if (!this.retained) return;
    this.retained = false;
    if (this.state.type(CLUSTER)) this.pump.mark(CLUSTER, { full: true });
    if (this.state.type(ENDPOINT)) this.pump.mark(ENDPOINT, { full: true });
  }
}
