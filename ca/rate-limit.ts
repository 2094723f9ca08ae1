// Token buckets keyed by a string (a peer address, an identity): each key may spend `limit` requests
// at once and gets them back at `limit` per `perMs`. Bounded: at most `maxKeys` buckets are kept;
// full buckets are dropped first (they hold no information), then the oldest.

export interface RateLimit {
  /** Requests a key may make at once, and per `perMs` over time. */
  readonly limit: number;
  readonly perMs: number;
}

export type Admission = { readonly ok: true } | { readonly ok: false; readonly retryAfterMs: number };

interface Bucket {
  tokens: number;
  at: number;
}

export class KeyedRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly rate: RateLimit,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 10_000,
  ) {
    if (!(rate.limit >= 1) || !(rate.perMs > 0))
      throw new Error('a rate limit needs limit ≥ 1 and a positive period');
  }

  /** Spends one request of `key`'s budget, or says how long until one is available. */
  take(key: string): Admission {
    const now = this.now();
    const bucket = this.refilled(key, now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterMs: Math.ceil(((1 - bucket.tokens) * this.rate.perMs) / this.rate.limit) };
  }

  /** Buckets kept (for tests and metrics). */
  get size(): number {
    return this.buckets.size;
  }

  private refilled(key: string, now: number): Bucket {
    let bucket = this.buckets.get(key);
    if (bucket) {
      const earned = ((now - bucket.at) * this.rate.limit) / this.rate.perMs;
      bucket.tokens = Math.min(this.rate.limit, bucket.tokens + Math.max(0, earned));
      bucket.at = now;
      return bucket;
    }
    if (this.buckets.size >= this.maxKeys) this.evict(now);
    bucket = { tokens: this.rate.limit, at: now };
    this.buckets.set(key, bucket);
    return bucket;
  }

  private evict(now: number): void {
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.at) * this.rate.limit) / this.rate.perMs >= this.rate.limit)
        this.buckets.delete(key);
    }
    // Still full: drop the oldest keys (insertion order), a tenth at a time.
    for (const key of this.buckets.keys()) {
      if (this.buckets.size < this.maxKeys * 0.9) break;
      this.buckets.delete(key);
    }
  }
}

/** The address part of a gRPC peer string: `ipv4:10.0.0.1:5555` → `10.0.0.1`, `ipv6:[::1]:5555` → `::1`. */
export function peerAddress(peer: string): string {
  const m = /^(?:ipv4:|ipv6:)?\[?([^\]]*?)\]?(?::\d+)?$/.exec(peer);
  return m?.[1] || peer;
}
