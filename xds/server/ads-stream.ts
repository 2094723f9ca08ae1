// One ADS stream as the rest of the server sees it, whichever protocol variant it speaks: SotW
// (sotw-connection.ts) and delta (delta-connection.ts), both on one core (stream-core.ts), implement
// this, so the registry, the push fan-out, disconnect records, config dumps and stream counts treat
// them alike. Observers and the debug pages get its read-only part, StreamView (observer.ts).
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { Logger } from '../../log/logger.js';
import type { GeneratorLookup } from '../generators/generator.js';
import { proxyFromNode, NodeError, type NodeInfo, type Proxy } from '../proxy/proxy.js';
import type { PushLimiter } from './flow-control.js';
import type { AdsObserver, RefusalReason, StreamView } from './observer.js';
import { shortTypeName } from '../proto/type-urls.js';
import type { StreamLimits } from './stream-limits.js';
import type { ChangeSet, ResourceCache } from './resource-cache.js';
import type { ResponseCache } from './response-cache.js';
import { scanRequest, type RequestFields } from '../protocol/request-reader.js';
import { boundRequest, nodeBoundsViolation, type BoundableRequest } from './client-input.js';
import type { PushRound } from './stream-pump.js';
import type { SubscriptionIndex } from './subscription-index.js';

export type { AdsApi, TypeStatus } from './observer.js';

export interface AdsStream extends StreamView {
  /** Set by the service once the secure port has verified the peer. */
  peerIdentity?: string | undefined;
  /** Applies one request as it came off the wire; throws (StreamError to choose the status) to end the stream. */
  handleRequest(bytes: Buffer): void;
  /** Marks what `changes` touched for this stream and joins `round`; returns whether anything was. */
  onChange(changes: ChangeSet, round: PushRound): boolean;
  /** A push of config generation `generation` handed the stream work (onChange returned true). */
  changedBy(generation: number): void;
  close(): void;
}

/** What every stream of a server shares. */
export interface StreamDeps {
  readonly generators: GeneratorLookup;
  readonly cache: ResourceCache;
  readonly responses: ResponseCache;
  readonly limiter: PushLimiter;
  /** Where the stream's subscriptions are indexed for the push fan-out. */
  readonly subscriptions: SubscriptionIndex<AdsStream>;
  readonly observer: AdsObserver;
  readonly logger: Logger;
  readonly limits: StreamLimits;
  /** The config generation of the serving view the cache holds: what a response is generated at. */
  readonly configGeneration: () => number;
}

/**
 * One message on the wire: whole, in parts sent back to back, or a shared body followed by the
 * stream's own nonce (DiscoveryResponse field 5), which the writer encodes straight into the frame.
 */
export type OutgoingMessage = Buffer | readonly Buffer[] | BodyAndNonce;

/** A shared response body and the nonce to send after it. */
export interface BodyAndNonce {
  readonly body: Buffer;
  readonly nonce: string;
}

/** What is particular to one stream's call. */
export interface StreamCall {
  /** Writes one message; `drained` runs once gRPC has taken it. */
  send(message: OutgoingMessage, drained: () => void): void;
  /**
   * Checks the proxy of the first request that carries a node (parsed once, by the stream), before
   * anything is answered; throws to refuse.
   */
  admit?(proxy: Proxy): void;
}

/** A request the server must refuse; the stream ends with this gRPC status. */
export class StreamError extends Error {
  constructor(
    readonly code: GrpcStatus,
    message: string,
    /** Set when a limit refused it (counted in metrics). */
    readonly refusal?: RefusalReason,
  ) {
    super(message);
  }
}

/** Refuses a request listing more than `max` names of `typeUrl` (counted without decoding them). */
export function checkNamesListed(listed: number, max: number, typeUrl: string): void {
  if (listed > max)
    throw new StreamError(
      GrpcStatus.INVALID_ARGUMENT,
      `${shortTypeName(typeUrl)}: the request lists ${listed} resource names; a stream may subscribe to at most ${max} per type (--max-names-per-type)`,
      'names-limit',
    );
}

/**
 * Reads a request: ACKs (no node, few names) take the hand-written `plain` reader; anything else is
 * counted first, so an oversized list costs a scan, not 100,000 strings, and then decoded in full
 * (which validates it).
 */
export function readBoundedRequest<T extends BoundableRequest>(
  bytes: Buffer,
  max: number,
  plain: (bytes: Buffer, max: number) => T | undefined,
  fields: RequestFields,
  decode: (bytes: Buffer) => T,
): T {
  const req = plain(bytes, max);
  if (req) return boundRequest(req);
  const scan = scanRequest(bytes, fields);
  checkNamesListed(scan.names, max, scan.typeUrl);
  // A NACK's message and the nonce cut to their bounds, before anything logs or keeps them.
  return boundRequest(decode(bytes));
}

/** Refuses a subscription that grew beyond `max` names of `typeUrl`. */
export function checkNamesSubscribed(subscribed: number, max: number, typeUrl: string): void {
  if (subscribed > max)
    throw new StreamError(
      GrpcStatus.INVALID_ARGUMENT,
      `${shortTypeName(typeUrl)}: the stream would subscribe to ${subscribed} resource names; at most ${max} per type (--max-names-per-type)`,
      'names-limit',
    );
}

/** Reads the proxy from a stream's first request, or refuses the stream. */
export function firstProxy(node: NodeInfo | undefined): Proxy {
  if (!node) throw new StreamError(GrpcStatus.INVALID_ARGUMENT, 'the first request must carry node');
  // Before anything keeps, logs or shows the node (client-input.ts).
  const over = nodeBoundsViolation(node);
  if (over) throw new StreamError(GrpcStatus.INVALID_ARGUMENT, `invalid node: ${over}`, 'node-bounds');
  try {
    return proxyFromNode(node);
  } catch (err) {
    if (err instanceof NodeError)
      throw new StreamError(GrpcStatus.INVALID_ARGUMENT, `invalid node: ${err.message}`);
    throw err;
  }
}
