// What one client may hold of the ADS server: names per subscription, streams per peer, and how long
// a stream may stay silent before its first request. Each is a `portolan serve` flag
// (docs/security.md, "Limits"); the defaults sit far above any real client.

export interface StreamLimits {
  /**
   * Resource names one stream may subscribe to per type, and list in one request. Beyond it the
   * stream ends with INVALID_ARGUMENT naming the limit (--max-names-per-type).
   */
  readonly maxNamesPerType: number;
  /**
   * Open streams per peer: per remote address on the plaintext port, per SPIFFE identity on the
   * secure port. One more is refused with RESOURCE_EXHAUSTED (--max-streams-per-peer).
   */
  readonly maxStreamsPerPeer: number;
  /** A stream that sends no request this long after it opened is ended (--first-request-timeout). */
  readonly firstRequestTimeoutMs: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  // An Envoy with 10,000 clusters subscribes to 10,000 load assignments; gRPC clients name a handful.
  maxNamesPerType: 10_000,
  // One VM runs one Envoy or a few gRPC processes (one stream each); a NAT or a service account
  // shared by a large fleet needs more: raise it.
  maxStreamsPerPeer: 1000,
  // Envoy and gRPC send their first request as they open the stream.
  firstRequestTimeoutMs: 30_000,
};

/** The peer key of a plaintext stream: the remote address without its port (`[::1]:5000` → `::1`). */
export function remoteAddress(peer: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(peer);
  if (bracketed?.[1]) return bracketed[1];
  const colon = peer.lastIndexOf(':');
  // One colon: IPv4 (or a name) with a port; more: a bare IPv6 address.
  return colon > 0 && peer.indexOf(':') === colon ? peer.slice(0, colon) : peer;
}

/** Counts open streams per peer key, refusing one beyond `max`. */
export class PeerStreams {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Takes a slot for `key`; false when the peer already holds `max` streams. */
  take(key: string): boolean {
    const n = this.open.get(key) ?? 0;
    if (n >= this.max) return false;
    this.open.set(key, n + 1);
    return true;
  }

  release(key: string): void {
    const n = (this.open.get(key) ?? 0) - 1;
    if (n > 0) this.open.set(key, n);
    else this.open.delete(key);
  }

  held(key: string): number {
    return this.open.get(key) ?? 0;
  }
}
