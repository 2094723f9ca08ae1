// The protocol state of one ADS stream, per type URL, following Envoy's xDS protocol document:
// subscriptions (wildcard and named), the last response sent (version, nonce), ACKs and NACKs.
// Pure: it decides, the connection sends. One test per rule in test/unit/xds/stream-state.test.ts.
import type { Nack } from '../../model/admin-api.js';
import { supportsWildcard } from '../proto/type-urls.js';
import { isoNow } from './wall-clock.js';

export interface RequestView {
  readonly typeUrl: string;
  readonly versionInfo: string;
  readonly responseNonce: string;
  readonly resourceNames: readonly string[];
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

export interface SentResponse {
  readonly version: string;
  readonly nonce: string;
  readonly names: readonly string[];
  readonly at: string;
}

/** A rejection by the client, as the admin API shows it (one definition: model/admin-api.ts). */
export type { Nack };

/** The empty subscription a type starts with (replaced, never edited, like every name set here). */
const NO_NAMES: ReadonlySet<string> = new Set();

export interface TypeState {
  wildcard: boolean;
  names: ReadonlySet<string>;
  sent?: SentResponse;
  ackedVersion?: string;
  /** The nonce of the response the client last ACKed. */
  ackedNonce?: string;
  ackedAt?: string;
  nack?: Nack;
  nackCount: number;
}

/** What to do with a request: ignore it (stale), or respond now (`force`: even if nothing changed). */
export type RequestOutcome =
  | { readonly action: 'ignore'; readonly reason: 'stale-nonce' }
  | { readonly action: 'ack' | 'nack'; readonly respond: boolean }
  | { readonly action: 'initial'; readonly respond: true };

// Outcomes are shared constants: a request is answered with one of these, never a new object.
const STALE: RequestOutcome = { action: 'ignore', reason: 'stale-nonce' };
const INITIAL: RequestOutcome = { action: 'initial', respond: true };
const ACK: RequestOutcome = { action: 'ack', respond: false };
const ACK_RESPOND: RequestOutcome = { action: 'ack', respond: true };
const NACK: RequestOutcome = { action: 'nack', respond: false };
const NACK_RESPOND: RequestOutcome = { action: 'nack', respond: true };

export class StreamState {
  private readonly typeStates = new Map<string, TypeState>();

  onRequest(req: RequestView, now?: string): RequestOutcome {
    const existing = this.typeStates.get(req.typeUrl);
    // A nonce we did not send last for this type answers an older response: ignore it whole.
    // A nonce on a type we never answered is a client reconnecting with state from an earlier stream.
    if (existing?.sent && req.responseNonce && req.responseNonce !== existing.sent.nonce) return STALE;
    let state = existing;
    if (!state) {
      // Every field present from the start: one object shape for all types and streams.
      state = {
        wildcard: false,
        names: NO_NAMES,
        sent: undefined,
        ackedVersion: undefined,
        ackedNonce: undefined,
        ackedAt: undefined,
        nack: undefined,
        nackCount: 0,
      };
      this.typeStates.set(req.typeUrl, state);
    }
    const subscriptionChanged = this.updateSubscription(state, req, existing === undefined);

    if (!state.sent || !req.responseNonce) return INITIAL;
    if (req.errorDetail) {
      state.nack = {
        version: state.sent.version,
        nonce: req.responseNonce,
        code: req.errorDetail.code,
        message: req.errorDetail.message,
        at: now ?? isoNow(),
      };
      state.nackCount += 1;
      return subscriptionChanged ? NACK_RESPOND : NACK;
    }
    state.ackedVersion = state.sent.version;
    state.ackedNonce = req.responseNonce;
    state.ackedAt = now ?? isoNow();
    state.nack = undefined;
    return subscriptionChanged ? ACK_RESPOND : ACK;
  }

  /**
   * Whether a response with `version` should go out: always when forced (a new or changed
   * subscription), otherwise only when it differs from what was last sent and was not NACKed.
   */
  shouldSend(typeUrl: string, version: string, force: boolean): boolean {
    const state = this.typeStates.get(typeUrl);
    if (!state) return false;
    if (force) return true;
    if (state.sent?.version === version) return false;
    return state.nack?.version !== version;
  }

  recordSent(typeUrl: string, sent: SentResponse): void {
    const state = this.typeStates.get(typeUrl);
    if (state) state.sent = sent;
  }

  subscription(
    typeUrl: string,
  ): { readonly wildcard: boolean; readonly names: ReadonlySet<string> } | undefined {
    return this.typeStates.get(typeUrl);
  }

  /** Every type's state, in the order the stream first asked for each. */
  types(): IterableIterator<[string, Readonly<TypeState>]> {
    return this.typeStates.entries();
  }

  watchedTypes(): string[] {
    return [...this.typeStates.keys()];
  }

  typeState(typeUrl: string): Readonly<TypeState> | undefined {
    return this.typeStates.get(typeUrl);
  }

  // Wildcard rules (xDS protocol, "How the client specifies what resources to return"): for LDS and
  // CDS, a first request with no names, or any request naming "*", subscribes to everything; a
  // later request with names and no "*" leaves wildcard mode.
  private updateSubscription(state: TypeState, req: RequestView, first: boolean): boolean {
    let wildcard = false;
    if (supportsWildcard(req.typeUrl)) {
      if (req.resourceNames.includes('*')) wildcard = true;
      else if (req.resourceNames.length === 0) wildcard = first || state.wildcard;
    }
    // Most requests are ACKs naming what is already subscribed: keep the set, allocate nothing.
    const sameNames = sameAsSet(req.resourceNames, state.names);
    const changed = wildcard !== state.wildcard || !sameNames;
    state.wildcard = wildcard;
    if (!sameNames) state.names = new Set(req.resourceNames.filter((n) => n !== '*'));
    return changed;
  }
}

/** Whether `names` (without "*") are exactly the members of `set`. */
function sameAsSet(names: readonly string[], set: ReadonlySet<string>): boolean {
  // The common ACK names one resource: no duplicate to look for, nothing to allocate.
  if (names.length === 1)
    return names[0] === '*' ? set.size === 0 : set.size === 1 && set.has(names[0] ?? '');
  let count = 0;
  const seen = new Set<string>();
  for (const n of names) {
    if (n === '*' || seen.has(n)) continue;
    if (!set.has(n)) return false;
    seen.add(n);
    count += 1;
  }
  return count === set.size;
}
