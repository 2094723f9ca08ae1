// Rate limit for one blocking-query loop, as Consul's documentation asks ("Rate limit" under
// Blocking Queries → Implementation Details): in the happy case a watch re-arms at once, but when a
// result churns (or a misbehaving server answers without blocking) the loop degrades to one request
// per interval instead of a busy loop. A token bucket with a small burst lets a couple of quick
// successive changes through undelayed.

export interface RateLimitOptions {
  /** Requests allowed back to back before limiting starts. */
  readonly burst: number;
  /** One more request is allowed per interval. */
  readonly intervalMs: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitOptions = { burst: 2, intervalMs: 1000 };

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly options: RateLimitOptions = DEFAULT_RATE_LIMIT,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = options.burst;
    this.last = now();
  }

  /** Takes one token; returns how long to wait before using it (0 when one was available). */
  take(): number {
    const t = this.now();
    this.tokens = Math.min(this.options.burst, this.tokens + (t - this.last) / this.options.intervalMs);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : -this.tokens * this.options.intervalMs;
  }
}
