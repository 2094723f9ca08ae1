// A local client's state-of-the-world ADS stream, proxied to the control plane. The agent speaks the
// protocol on both sides: to the client it is a server (its own nonces, the protocol rules of
// xds/protocol/sotw-state.ts), to the control plane a client that mirrors the client's subscriptions.
// That is what lets the local stream outlive the upstream one:
//
// - what the client ACKs goes into the node cache; a subscription the control plane has not
//   answered is served from there (at once while it is unreachable);
// - a new upstream stream (after an outage, or a renewed certificate) is given the client's
//   subscriptions and ACKed versions, and the answers are forwarded — except a response the client
//   already holds, which the agent ACKs itself, so a reconnect changes nothing the client sees.
import { StreamState } from '../../xds/protocol/sotw-state.js';
import { readPlainRequest } from '../../xds/protocol/request-reader.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { supportsWildcard } from '../../xds/proto/type-urls.js';
import {
  appendNonce,
  decodeDiscoveryRequest,
  encodeDiscoveryResponse,
  type DiscoveryRequest,
} from '../../xds/proto/wire.js';
import { LocalStream, type TypeSummary } from './local-stream.js';
import { boundErrorDetail, encodeSotwRequest, readSotwResponse } from './messages.js';

interface Subscription {
  readonly wildcard: boolean;
  readonly names: ReadonlySet<string>;
}

/** The last response sent to the client for a type. */
interface Sent {
  readonly localNonce: string;
  readonly from: 'control plane' | 'cache';
  /** The control plane's nonce and stream, when it came from there. */
  readonly upstreamNonce: string;
  readonly generation: number;
  readonly versionInfo: string;
  readonly resources: readonly EncodedResource[];
  /** The subscription it answered (what an ACK of it tells the cache). */
  readonly sub: Subscription;
}

export class SotwProxyStream extends LocalStream {
  private readonly state = new StreamState();
  private readonly sent = new Map<string, Sent>();
  /** Per type, the local nonce of the last response the client ACKed. */
  private readonly acked = new Map<string, string>();
  /** Per type, the control plane's last nonce on the current upstream stream. */
  private readonly upstreamNonces = new Map<string, string>();
  /** Types whose latest subscription nothing has answered yet. */
  private readonly pending = new Set<string>();

  handle(bytes: Buffer): void {
    const accepted = this.accept(
      bytes,
      'DiscoveryRequest',
      (b) => readPlainRequest(b) ?? decodeDiscoveryRequest(b),
    );
    if (accepted) this.request(accepted.req, accepted.first);
  }

  private request(req: DiscoveryRequest, first: boolean): void {
    // A client's NACK message is bounded before it is logged or forwarded.
    const errorDetail = boundErrorDetail(req.errorDetail);
    const typeUrl = req.typeUrl;
    const before = this.sent.get(typeUrl);
    const outcome = this.state.onRequest(req);
    if (outcome.action === 'ignore') return; // stale nonce: the client answers an older response
    const answersLast = before !== undefined && req.responseNonce === before.localNonce;
    if (answersLast && outcome.action === 'ack') {
      this.acked.set(typeUrl, before.localNonce);
      if (before.from === 'control plane')
        this.deps.cache.applySotw(
          this.cacheKeyValue,
          typeUrl,
          before.versionInfo,
          before.resources,
          before.sub,
        );
    }
    if (outcome.action === 'nack')
      this.deps.logger.warn(
        { stream: this.id, node: this.nodeId, typeUrl, from: before?.from, error: errorDetail?.message },
        'local client rejected config (NACK)',
      );
    const changed = outcome.action === 'initial' || outcome.respond;
    const link = this.link;
    if (!link) return;
    if (first) {
      link.open(); // its replay carries this request
    } else if (link.isOpen()) {
      const current = answersLast && before.from === 'control plane' && before.generation === link.generation;
      if (current || changed)
        link.send(
          encodeSotwRequest({
            typeUrl,
            names: req.resourceNames,
            versionInfo: req.versionInfo,
            nonce: current ? before.upstreamNonce : (this.upstreamNonces.get(typeUrl) ?? ''),
            ...(current && errorDetail && { errorDetail }),
          }),
        );
    }
    if (changed) {
      this.pending.add(typeUrl);
      this.awaitAnswer(typeUrl);
    }
  }

  protected replay(): Buffer[] {
    this.upstreamNonces.clear();
    const out: Buffer[] = [];
    for (const typeUrl of this.state.watchedTypes()) {
      const sub = this.state.subscription(typeUrl);
      if (!sub) continue;
      // Unsubscribed from everything: on a new stream an empty list would mean "everything".
      if (!sub.wildcard && sub.names.size === 0 && supportsWildcard(typeUrl)) continue;
      out.push(
        encodeSotwRequest({
          ...(out.length === 0 && this.node && { node: this.node }),
          typeUrl,
          names: requestNames(sub),
          versionInfo: this.state.typeState(typeUrl)?.ackedVersion ?? '',
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
      res = readSotwResponse(bytes);
    } catch (err) {
      this.deps.logger.warn({ stream: this.id, err }, 'unreadable response from the control plane: dropped');
      return;
    }
    const typeUrl = res.typeUrl;
    this.upstreamNonces.set(typeUrl, res.nonce);
    this.answered(typeUrl);
    const sub = snapshot(this.state.subscription(typeUrl));
    const last = this.sent.get(typeUrl);
    if (
      last &&
      !this.pending.has(typeUrl) &&
      this.acked.get(typeUrl) === last.localNonce &&
      last.versionInfo === res.versionInfo &&
      sameResources(last.resources, res.resources)
    ) {
      // The client holds exactly this: ACK it on its behalf and keep the stream quiet.
      this.sent.set(typeUrl, { ...last, from: 'control plane', upstreamNonce: res.nonce, generation });
      link.send(
        encodeSotwRequest({
          typeUrl,
          names: requestNames(sub),
          versionInfo: res.versionInfo,
          nonce: res.nonce,
        }),
      );
      return;
    }
    const localNonce = this.nextNonce();
    this.state.recordSent(typeUrl, {
      version: res.versionInfo,
      nonce: localNonce,
      names: res.resources.map((r) => r.name),
      at: new Date().toISOString(),
    });
    this.sent.set(typeUrl, {
      localNonce,
      from: 'control plane',
      upstreamNonce: res.nonce,
      generation,
      versionInfo: res.versionInfo,
      resources: res.resources,
      sub,
    });
    this.pending.delete(typeUrl);
    this.write(appendNonce(bytes, localNonce));
  }

  protected upstreamLost(): void {
    this.upstreamNonces.clear();
    for (const typeUrl of [...this.pending]) this.serveFromCache(typeUrl);
  }

  protected serveFromCache(typeUrl: string): boolean {
    if (!this.pending.has(typeUrl) || this.isClosed) return false;
    const entry = this.deps.cache.get(this.cacheKeyValue, typeUrl);
    const sub = snapshot(this.state.subscription(typeUrl));
    if (!entry) return false;
    const resources = sub.wildcard
      ? [...entry.resources.values()]
      : [...sub.names].flatMap((n) => entry.resources.get(n) ?? []);
    if (!sub.wildcard && resources.length === 0) return false;
    const localNonce = this.nextNonce();
    this.state.recordSent(typeUrl, {
      version: entry.versionInfo,
      nonce: localNonce,
      names: resources.map((r) => r.name),
      at: new Date().toISOString(),
    });
    this.sent.set(typeUrl, {
      localNonce,
      from: 'cache',
      upstreamNonce: '',
      generation: -1,
      versionInfo: entry.versionInfo,
      resources,
      sub,
    });
    this.pending.delete(typeUrl);
    this.cacheResponses += 1;
    this.deps.observer?.servedFromCache?.(this, typeUrl, resources.length);
    this.write(
      encodeDiscoveryResponse({ versionInfo: entry.versionInfo, resources, typeUrl, nonce: localNonce }),
    );
    return true;
  }

  types(): TypeSummary[] {
    return this.state.watchedTypes().map((typeUrl) => {
      const sub = this.state.subscription(typeUrl);
      const from = this.sent.get(typeUrl)?.from;
      return {
        typeUrl,
        wildcard: sub?.wildcard ?? false,
        names: [...(sub?.names ?? [])],
        acked: this.state.typeState(typeUrl)?.ackedVersion ?? '',
        ...(from && { lastFrom: from }),
      };
    });
  }
}

function snapshot(sub: Subscription | undefined): Subscription {
  return { wildcard: sub?.wildcard ?? false, names: new Set(sub?.names ?? []) };
}

/** resource_names for a subscription: "*" kept explicit when names ride along. */
function requestNames(sub: Subscription): string[] {
  return sub.wildcard && sub.names.size > 0 ? ['*', ...sub.names] : [...sub.names];
}

function sameResources(a: readonly EncodedResource[], b: readonly EncodedResource[]): boolean {
  if (a.length !== b.length) return false;
  const versions = new Map(a.map((r) => [r.name, r.version]));
  return b.every((r) => versions.get(r.name) === r.version);
}
