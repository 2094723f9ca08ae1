// A local client's incremental (delta) ADS stream, proxied like the SotW one (sotw-proxy-stream.ts):
// the agent keeps the client's subscriptions and the version of every resource it holds (its ACKs),
// so a new upstream stream starts with those as initial_resource_versions and the control plane
// sends only what changed; a subscription nobody has answered is served from the node cache.
import { DeltaStreamState } from '../../xds/protocol/delta-state.js';
import { readPlainDeltaRequest } from '../../xds/protocol/request-reader.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import {
  appendNonce,
  decodeDeltaDiscoveryRequest,
  encodeDeltaDiscoveryResponse,
  type DeltaDiscoveryRequest,
} from '../../xds/proto/wire.js';
import { LocalStream, type TypeSummary } from './local-stream.js';
import { boundErrorDetail, encodeDeltaRequest, readDeltaResponse } from './messages.js';

/** A response sent to the client and not yet answered. */
interface InFlight {
  readonly from: 'control plane' | 'cache';
  readonly upstreamNonce: string;
  readonly generation: number;
  readonly systemVersion: string;
  readonly resources: readonly EncodedResource[];
  readonly removed: readonly string[];
}

/** Unanswered responses kept per type; a client that never answers cannot grow it. */
const MAX_IN_FLIGHT = 16;

export class DeltaProxyStream extends LocalStream {
  private readonly state = new DeltaStreamState();
  private readonly inFlight = new Map<string, Map<string, InFlight>>();
  private readonly pending = new Set<string>();
  private readonly lastFrom = new Map<string, InFlight['from']>();
  private readonly ackedNonces = new Map<string, string>();

  handle(bytes: Buffer): void {
    const accepted = this.accept(
      bytes,
      'DeltaDiscoveryRequest',
      (b) => readPlainDeltaRequest(b) ?? decodeDeltaDiscoveryRequest(b),
    );
    if (accepted) this.request(accepted.req, accepted.first);
  }

  private request(req: DeltaDiscoveryRequest, first: boolean): void {
    // A client's NACK message is bounded before it is logged or forwarded.
    const errorDetail = boundErrorDetail(req.errorDetail);
    const typeUrl = req.typeUrl;
    const newType = this.state.type(typeUrl) === undefined;
    const outcome = this.state.onRequest(req);
    const link = this.link;
    if (!link) return;
    let forwardNonce = '';
    if (req.responseNonce) {
      const sent = this.inFlight.get(typeUrl)?.get(req.responseNonce);
      this.inFlight.get(typeUrl)?.delete(req.responseNonce);
      if (sent && outcome.action === 'ack') this.accepted(typeUrl, req.responseNonce, sent);
      if (outcome.action === 'nack')
        this.deps.logger.warn(
          { stream: this.id, node: this.nodeId, typeUrl, from: sent?.from, error: errorDetail?.message },
          'local client rejected config (NACK)',
        );
      if (sent?.from === 'control plane' && sent.generation === link.generation)
        forwardNonce = sent.upstreamNonce;
    }
    const unsubscribed = req.unsubscribe.filter((n) => n !== '*');
    if (unsubscribed.length > 0) this.deps.cache.forget(this.cacheKeyValue, typeUrl, unsubscribed);
    const changed = newType || req.subscribe.length > 0 || req.unsubscribe.length > 0;
    if (first) {
      link.open(); // its replay carries this request
    } else if (link.isOpen() && (forwardNonce || changed)) {
      link.send(
        encodeDeltaRequest({
          typeUrl,
          subscribe: req.subscribe,
          unsubscribe: req.unsubscribe,
          ...(newType && { initialVersions: heldVersions(this.state.type(typeUrl)?.known) }),
          nonce: forwardNonce,
          ...(forwardNonce && errorDetail && { errorDetail }),
        }),
      );
    }
    if (changed) {
      this.pending.add(typeUrl);
      this.awaitAnswer(typeUrl);
    }
  }

  /** The client ACKed `sent`: it now holds those versions, and the cache learns them. */
  private accepted(typeUrl: string, nonce: string, sent: InFlight): void {
    const known = this.state.type(typeUrl)?.known;
    for (const r of sent.resources) known?.set(r.name, r.version);
    for (const n of sent.removed) known?.delete(n);
    this.ackedNonces.set(typeUrl, nonce);
    if (sent.from === 'control plane')
      this.deps.cache.applyDelta(
        this.cacheKeyValue,
        typeUrl,
        sent.systemVersion,
        sent.resources,
        sent.removed,
      );
  }

  protected replay(): Buffer[] {
    const out: Buffer[] = [];
    for (const typeUrl of this.state.watchedTypes()) {
      const t = this.state.type(typeUrl);
      if (!t || (!t.wildcard && t.names.size === 0)) continue;
      out.push(
        encodeDeltaRequest({
          ...(out.length === 0 && this.node && { node: this.node }),
          typeUrl,
          subscribe: t.wildcard ? ['*', ...t.names] : [...t.names],
          unsubscribe: [],
          initialVersions: heldVersions(t.known),
          nonce: '',
        }),
      );
    }
    return out;
  }

  protected fromUpstream(bytes: Buffer, generation: number): void {
    const link = this.link;
    if (!link || generation !== link.generation || this.isClosed) return;
    let res;
    try {
      res = readDeltaResponse(bytes);
    } catch (err) {
      this.deps.logger.warn({ stream: this.id, err }, 'unreadable response from the control plane: dropped');
      return;
    }
    const typeUrl = res.typeUrl;
    this.answered(typeUrl);
    if (res.resources.length === 0 && res.removed.length === 0 && !this.pending.has(typeUrl)) {
      // Nothing the client lacks (a reconnect with its versions): ACK for it, stay quiet.
      link.send(encodeDeltaRequest({ typeUrl, subscribe: [], unsubscribe: [], nonce: res.nonce }));
      return;
    }
    this.pending.delete(typeUrl);
    this.send(typeUrl, bytes, {
      from: 'control plane',
      upstreamNonce: res.nonce,
      generation,
      systemVersion: res.systemVersion,
      resources: res.resources,
      removed: res.removed,
    });
  }

  protected upstreamLost(): void {
    for (const typeUrl of [...this.pending]) this.serveFromCache(typeUrl);
  }

  protected serveFromCache(typeUrl: string): boolean {
    if (!this.pending.has(typeUrl) || this.isClosed) return false;
    const entry = this.deps.cache.get(this.cacheKeyValue, typeUrl);
    const t = this.state.type(typeUrl);
    if (!entry || !t) return false;
    const candidates = t.wildcard
      ? [...entry.resources.values()]
      : [...t.names].flatMap((n) => entry.resources.get(n) ?? []);
    // What the client already holds at that version needs no sending.
    const resources = candidates.filter((r) => t.known.get(r.name) !== r.version);
    this.pending.delete(typeUrl);
    if (resources.length === 0) return candidates.length > 0;
    this.cacheResponses += 1;
    this.deps.observer?.servedFromCache?.(this, typeUrl, resources.length);
    this.send(typeUrl, undefined, {
      from: 'cache',
      upstreamNonce: '',
      generation: -1,
      systemVersion: entry.versionInfo,
      resources,
      removed: [],
    });
    return true;
  }

  /** Sends `upstreamBytes` (with our nonce) or, from the cache, a response built from `sent`. */
  private send(typeUrl: string, upstreamBytes: Buffer | undefined, sent: InFlight): void {
    const nonce = this.nextNonce();
    let flight = this.inFlight.get(typeUrl);
    if (!flight) this.inFlight.set(typeUrl, (flight = new Map<string, InFlight>()));
    flight.set(nonce, sent);
    if (flight.size > MAX_IN_FLIGHT) {
      const oldest = flight.keys().next().value;
      if (oldest !== undefined) flight.delete(oldest);
    }
    this.state.recordSent(typeUrl, nonce);
    this.lastFrom.set(typeUrl, sent.from);
    this.write(
      upstreamBytes
        ? appendNonce(upstreamBytes, nonce)
        : encodeDeltaDiscoveryResponse({
            systemVersion: sent.systemVersion,
            resources: sent.resources,
            removed: [],
            typeUrl,
            nonce,
          }),
    );
  }

  types(): TypeSummary[] {
    return this.state.watchedTypes().map((typeUrl) => {
      const t = this.state.type(typeUrl);
      const from = this.lastFrom.get(typeUrl);
      return {
        typeUrl,
        wildcard: t?.wildcard ?? false,
        names: [...(t?.names ?? [])],
        acked: this.ackedNonces.get(typeUrl) ?? '',
        ...(from && { lastFrom: from }),
      };
    });
  }
}

/** The versions a client holds, without the "told it does not exist" entries. */
function heldVersions(known: ReadonlyMap<string, string> | undefined): Map<string, string> {
  return new Map([...(known ?? [])].filter(([, v]) => v !== ''));
}
