// The protocol state of one incremental (delta) ADS stream, per type URL, following Envoy's xDS
// protocol document: subscriptions changed by subscribe/unsubscribe (with the wildcard rules of LDS
// and CDS), the version of every resource the client holds, and ACK/NACK by nonce. Pure: it
// decides, the connection sends.
import { supportsWildcard } from '../proto/type-urls.js';
import type { DeltaDiscoveryRequest } from '../proto/wire.js';
import type { Nack } from './sotw-state.js';
import { isoNow } from './wall-clock.js';

export interface DeltaTypeState {
  wildcard: boolean;
  readonly names: Set<string>;
  /** name → version the client holds ('' = told it does not exist). */
  readonly known: Map<string, string>;
  /** Nonces sent and not yet answered, with the versions they carried. */
  readonly inFlight: Map<string, { readonly at: string }>;
  lastNonce?: string;
  /** When the response with `lastNonce` was sent. */
  lastSentAt?: string;
  ackedAt?: string;
  ackedNonce?: string;
  nack?: Nack;
  nackCount: number;
}

export type DeltaOutcome =
  | { readonly action: 'ack' | 'nack'; readonly nonce: string; readonly changed: DeltaSubscriptionChange }
  | { readonly action: 'subscribe'; readonly changed: DeltaSubscriptionChange };

export interface DeltaSubscriptionChange {
  /** Names newly subscribed (respond for them even if unchanged). */
  readonly added: readonly string[];
  /** Whether wildcard mode was entered on this request. */
  readonly wildcardEntered: boolean;
  /** Whether this is the first request for the type on this stream. */
  readonly first: boolean;
}

export class DeltaStreamState {
  private readonly types = new Map<string, DeltaTypeState>();

  onRequest(req: DeltaDiscoveryRequest, now = isoNow()): DeltaOutcome {
    let state = this.types.get(req.typeUrl);
    const first = state === undefined;
    if (!state) {
      state = { wildcard: false, names: new Set(), known: new Map(), inFlight: new Map(), nackCount: 0 };
      this.types.set(req.typeUrl, state);
      // A reconnecting client says what it holds; only what differs is sent again.
      for (const [name, version] of req.initialVersions) state.known.set(name, version);
    }
    const changed = this.updateSubscription(state, req, first);
    if (!req.responseNonce) return { action: 'subscribe', changed };
    state.inFlight.delete(req.responseNonce);
    if (req.errorDetail) {
      state.nack = {
        version: req.responseNonce,
        nonce: req.responseNonce,
        code: req.errorDetail.code,
        message: req.errorDetail.message,
        at: now,
      };
      state.nackCount += 1;
      return { action: 'nack', nonce: req.responseNonce, changed };
    }
    state.ackedAt = now;
    state.ackedNonce = req.responseNonce;
    state.nack = undefined;
    return { action: 'ack', nonce: req.responseNonce, changed };
  }

  recordSent(typeUrl: string, nonce: string, at = isoNow()): void {
    const state = this.types.get(typeUrl);
    if (!state) return;
    state.lastNonce = nonce;
    state.lastSentAt = at;
    state.inFlight.set(nonce, { at });
    // A client that never answers must not grow this without bound: keep the latest few.
    if (state.inFlight.size > 16) {
      const oldest = state.inFlight.keys().next().value;
      if (oldest !== undefined) state.inFlight.delete(oldest);
    }
  }

  type(typeUrl: string): DeltaTypeState | undefined {
    return this.types.get(typeUrl);
  }

  watchedTypes(): string[] {
    return [...this.types.keys()];
  }

  // Wildcard (xDS protocol, "Delta xDS ... wildcard"): for LDS and CDS, a first request that
  // subscribes to nothing, or any request subscribing to "*", is wildcard; unsubscribing "*" ends it.
  private updateSubscription(
    state: DeltaTypeState,
    req: DeltaDiscoveryRequest,
    first: boolean,
  ): DeltaSubscriptionChange {
    const wasWildcard = state.wildcard;
    if (supportsWildcard(req.typeUrl)) {
      if (req.subscribe.includes('*')) state.wildcard = true;
      else if (first && req.subscribe.length === 0) state.wildcard = true;
      if (req.unsubscribe.includes('*')) state.wildcard = false;
    }
    const added: string[] = [];
    for (const n of req.subscribe) {
      if (n === '*' || state.names.has(n)) continue;
      state.names.add(n);
      added.push(n);
    }
    for (const n of req.unsubscribe) {
      if (n === '*') continue;
      state.names.delete(n);
      // The client forgets what it unsubscribed from; a later subscribe gets it again.
      if (!state.wildcard) state.known.delete(n);
    }
    return { added, wildcardEntered: state.wildcard && !wasWildcard, first };
  }
}
