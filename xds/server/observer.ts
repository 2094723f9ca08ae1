// What the ADS server reports as it works, in the style of go-control-plane's server Callbacks:
// streams opening, identifying their proxy and closing; requests, responses and NACKs on them;
// changes to the model and the push rounds they cause. The server reports only through this seam:
// metrics (metrics/ads-metrics.ts) and the proxy history (connection-log.ts) implement it, and
// cli/ composes them. Every method is optional; observers must not throw and must be cheap, since
// responses are reported per stream per push.
import type { ChangeEvent, ChangeTrigger } from '../../model/change.js';
import type { EncodedResource } from '../proto/resource.js';
import type { Nack } from '../protocol/sotw-state.js';
import type { Proxy } from '../proxy/proxy.js';

export type AdsApi = 'sotw' | 'delta';

/**
 * One stream as observers and the debug pages see it: who is on it and what it asked for, was sent
 * and accepted, read-only. Handling its requests and pushes stays the server's (ads-stream.ts).
 */
export interface StreamView {
  /** `conn-N`, unique per server. */
  readonly id: string;
  /** The client's address as gRPC reports it. */
  readonly peer: string;
  readonly api: AdsApi;
  readonly connectedAt: string;
  /** The peer's verified identity (a SPIFFE ID) on the secure port; undefined on the plaintext one. */
  readonly peerIdentity?: string | undefined;
  /** The proxy, from the first request's node; undefined before it. */
  readonly proxy: Proxy | undefined;
  /** What it subscribes to of `typeUrl` (the stream's own set of names, not a copy); undefined if nothing. */
  subscription(typeUrl: string): Subscription | undefined;
  /** Per type the stream subscribes to, in the order it first asked: what was sent, ACKed and NACKed. */
  typeStatus(): readonly TypeStatus[];
  /** The resources of `typeUrl` the client holds, as far as the server knows (config dumps). */
  heldResources(typeUrl: string): readonly EncodedResource[];
  /** Which config generations reached the stream (GET /debug/waitz); absent on test doubles. */
  waitStatus?(): StreamWaitStatus;
}

/** What the stream was handed and sent of the config generations (stream-generations.ts). */
export interface StreamWaitStatus {
  /** The highest config generation a push handed this stream work at; -1 if none did. */
  readonly changedGeneration: number;
  /** The config generation of the stream's first response; undefined before any. */
  readonly firstSentGeneration: number | undefined;
  /** The types with work queued for the stream (not yet built, held back, or waiting for a slot). */
  readonly queued: readonly string[];
}

export interface Subscription {
  /** Subscribed to every resource of the type (LDS and CDS only). */
  readonly wildcard: boolean;
  /** The names subscribed to besides the wildcard. */
  readonly names: ReadonlySet<string>;
}

export interface TypeStatus {
  readonly typeUrl: string;
  /** What identifies the last response: its version (SotW) or nonce (delta); '' before any. */
  readonly sentVersion: string;
  /** The nonce of the last response; '' before any. */
  readonly sentNonce: string;
  readonly sentAt?: string;
  /** The last response the client accepted, by the same identifier, its nonce, and when. */
  readonly acked?: { readonly version: string; readonly nonce: string; readonly at: string };
  /** The last rejection, until the next ACK. */
  readonly nack?: Nack;
  /** The config generation the last response was generated at (config-dir/generations.ts). */
  readonly sentGeneration?: number;
  /** The config generation of the response `nack` rejected. */
  readonly nackGeneration?: number;
}

/** One response written to a stream. */
export interface ResponseSent {
  readonly typeUrl: string;
  /** The type as LDS, RDS, CDS or EDS (the label metrics and debug views use). */
  readonly type: string;
  /** Resources in it (for delta, those added or updated). */
  readonly resources: number;
  /** Its protobuf size, before gRPC framing. */
  readonly bytes: number;
  /** Time spent building it for this stream (cache lookups, diff, framing). */
  readonly buildMs: number;
  /** The config generation it was generated at. */
  readonly generation?: number;
}

/** A client rejecting what it was sent. */
export interface NackReceived {
  readonly typeUrl: string;
  /** The type as LDS, RDS, CDS or EDS. */
  readonly type: string;
  /** The nonce of the response it rejects. */
  readonly nonce: string;
  readonly code: number;
  readonly message: string;
  /** The config generation of the response it rejects, when the stream still knows it. */
  readonly generation?: number;
}

/** A workload's readiness as its agent reported it (an `istio.io/health` request). */
export interface HealthReport {
  readonly healthy: boolean;
  /** The probe's error when unhealthy. */
  readonly message: string;
}

/** eds: endpoints only; services: a service changed; config: the mesh config changed. */
export type PushKind = 'eds' | 'services' | 'config';

/** One push: a debounced batch of changes applied to the cache and handed to the streams. */
export interface PushInfo {
  /** 1 for the first push of this server. */
  readonly round: number;
  readonly kind: PushKind;
  /** Change events merged into it. */
  readonly changesMerged: number;
  /** From its first change being seen to the push starting. */
  readonly debounceMs: number;
  /** What caused it: registries and files (when the change said), and the hostnames that changed. */
  readonly trigger: PushTrigger;
  /** The config generation of the serving view it pushes (config-dir/generations.ts). */
  readonly generation?: number;
}

export interface PushTrigger extends ChangeTrigger {
  /** The changed hostnames, at most MAX_TRIGGER_NAMES of them; empty for a config change. */
  readonly hostnames: readonly string[];
  /** How many hostnames changed in all. */
  readonly hostnameCount: number;
}

/** Why a stream was refused by a limit: at open (unauthenticated, peer-limit), or later. */
export type RefusalReason =
  'unauthenticated' | 'peer-limit' | 'first-request-timeout' | 'names-limit' | 'node-bounds';

export interface AdsObserver {
  /** A stream was accepted; its proxy is not known until `streamIdentified`. */
  streamOpened?(stream: StreamView): void;
  /** The stream's first request named its node: `stream.proxy` is set from now on. */
  streamIdentified?(stream: StreamView): void;
  /** The stream ended ('client closed', 'cancelled', 'error' or 'refused'). */
  streamClosed?(stream: StreamView, reason: string): void;
  /** A limit refused a stream, at open (before `streamOpened`) or later (then `streamClosed` follows). */
  streamRefused?(reason: RefusalReason): void;
  /** A request for `typeUrl` was accepted on the stream. */
  request?(stream: StreamView, typeUrl: string): void;
  responseSent?(stream: StreamView, response: ResponseSent): void;
  nack?(stream: StreamView, nack: NackReceived): void;
  /** The agent on the stream reported its workload's readiness probe (auto-registration). */
  healthReported?(stream: StreamView, report: HealthReport): void;
  /** The service model changed (one event from the discovery, before debouncing). */
  modelChanged?(event: ChangeEvent): void;
  /** A push started: the new serving view is about to be applied. */
  pushStarted?(push: PushInfo): void;
  /** Every affected stream (`streams` of them) was handed its work, `pushMs` after the push started. */
  pushHandedOut?(push: PushInfo, pushMs: number, streams: number): void;
  /** The last stream the push touched has sent it, `convergenceMs` after its first change was seen. */
  pushConverged?(push: PushInfo, convergenceMs: number): void;
  /** The server stopped: write out anything buffered. */
  serverStopped?(): void;
}

const METHODS = [
  'streamOpened',
  'streamIdentified',
  'streamClosed',
  'streamRefused',
  'request',
  'responseSent',
  'nack',
  'healthReported',
  'modelChanged',
  'pushStarted',
  'pushHandedOut',
  'pushConverged',
  'serverStopped',
] as const satisfies readonly (keyof AdsObserver)[];

type Method = (typeof METHODS)[number];
type Listener = (...args: unknown[]) => void;

/**
 * An observer that reports to each of `observers`, in order. Each event is wired only to the
 * observers that implement it, and left out when none does: the server skips an event nobody
 * hears (`request` is reported per request, `responseSent` per response).
 */
export function composeObservers(...observers: readonly AdsObserver[]): AdsObserver {
  const [only] = observers;
  if (observers.length === 1 && only) return only;
  const composed: Partial<Record<Method, Listener>> = {};
  for (const method of METHODS) {
    const listeners: Listener[] = [];
    for (const o of observers) {
      // Bound to its observer: observers are class instances whose methods use `this`.
      const fn = (o as Partial<Record<Method, (this: AdsObserver, ...args: unknown[]) => void>>)[method];
      if (typeof fn === 'function') listeners.push(fn.bind(o));
    }
    const [first, second] = listeners;
    if (!first) continue;
    composed[method] = second
      ? (...args: unknown[]) => {
          for (const l of listeners) l(...args);
        }
      : first;
  }
  return composed;
}
