// One Consul blocking-query loop: ask with the last X-Consul-Index, wait for the answer, re-arm.
// It follows the rules in Consul's "Blocking Queries → Implementation Details":
//   - an index lower than the last one (snapshot restore, upgrade) resets the loop to index 0, so
//     the next request fetches the current state without blocking;
//   - an index of 0 is never waited on: it is raised to 1, which always blocks;
//   - requests are rate limited (token bucket), so a churning result or a server that answers at
//     once degrades into polling instead of a busy loop.
// Failures (errors, client-side timeouts) back off exponentially with jitter and retry forever; with
// a recovery probe (recovery-probe.ts), a backoff ends early once Consul is seen to answer again.
import { setTimeout as sleep } from 'node:timers/promises';
import { Backoff, type BackoffOptions } from '../../model/backoff.js';
import type { RecoveryProbe } from '../recovery-probe.js';
import { DEFAULT_RATE_LIMIT, TokenBucket, type RateLimitOptions } from './token-bucket.js';

export interface BlockingResult<T> {
  readonly body: T;
  /** The X-Consul-Index of the answer. */
  readonly index: bigint;
}

/** One request: index 0 means "answer now" (no blocking). */
export type BlockingFetch<T> = (index: bigint, signal: AbortSignal) => Promise<BlockingResult<T>>;

export interface WatchHandlers<T> {
  /** A successful answer; `changed` is false when the index did not move (the wait just ran out). */
  onAnswer(body: T, changed: boolean): void;
  onError(error: Error, consecutiveFailures: number): void;
}

export interface WatchPacing {
  readonly backoff: BackoffOptions;
  readonly rateLimit: RateLimitOptions;
  /** Shared by a registry's watches: ends their backoff when the source comes back. */
  readonly recovery?: RecoveryProbe;
}

/**
 * From 250 ms doubling to 30 s, half of each delay random: a thousand watches failing together
 * (Consul down) do not retry in lock-step, and none retries at once in a tight loop.
 */
export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 250, maxMs: 30_000, jitter: 0.5 };

export const DEFAULT_PACING: WatchPacing = { backoff: DEFAULT_BACKOFF, rateLimit: DEFAULT_RATE_LIMIT };

export interface WatchStats {
  readonly index: string;
  readonly requests: number;
  readonly consecutiveFailures: number;
  readonly indexResets: number;
  readonly lastAnswerAt?: string;
  readonly lastError?: string;
}

export class BlockingWatch<T> {
  private index = 0n;
  private readonly abort = new AbortController();
  private readonly backoff: Backoff;
  private readonly bucket: TokenBucket;
  private readonly recovery: RecoveryProbe | undefined;
  private started = false;
  private requests = 0;
  private indexResets = 0;
  private lastAnswerAt: string | undefined;
  private lastError: string | undefined;

  constructor(
    private readonly fetch: BlockingFetch<T>,
    private readonly handlers: WatchHandlers<T>,
    pacing: WatchPacing = DEFAULT_PACING,
    random: () => number = Math.random,
  ) {
    this.backoff = new Backoff(pacing.backoff, random);
    this.bucket = new TokenBucket(pacing.rateLimit);
    this.recovery = pacing.recovery;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    void this.run();
  }

  /** Ends the loop and aborts the request in flight; no handler is called afterwards. */
  stop(): void {
    this.abort.abort();
  }

  get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  stats(): WatchStats {
    return {
      index: this.index.toString(),
      requests: this.requests,
      consecutiveFailures: this.backoff.consecutiveFailures,
      indexResets: this.indexResets,
      ...(this.lastAnswerAt && { lastAnswerAt: this.lastAnswerAt }),
      ...(this.lastError && { lastError: this.lastError }),
    };
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      await this.pause(this.bucket.take());
      if (this.stopped) return;
      let result: BlockingResult<T>;
      try {
        this.requests++;
        result = await this.fetch(this.index, this.abort.signal);
      } catch (err) {
        if (this.stopped) return;
        const error = err instanceof Error ? err : new Error(String(err));
        this.lastError = error.message;
        const delay = this.backoff.next();
        this.handlers.onError(error, this.backoff.consecutiveFailures);
        await (this.recovery ? this.recovery.pause(delay, this.abort.signal) : this.pause(delay));
        continue;
      }
      if (this.stopped) return;
      this.backoff.reset();
      this.lastError = undefined;
      this.lastAnswerAt = new Date().toISOString();
      const previous = this.index;
      if (result.index > 0n && result.index < previous) {
        // The index went backwards: restart from 0 and take the next (non-blocking) answer.
        this.index = 0n;
        this.indexResets++;
        continue;
      }
      this.index = result.index > 0n ? result.index : 1n;
      this.handlers.onAnswer(result.body, previous === 0n || result.index !== previous);
    }
  }

  private async pause(ms: number): Promise<void> {
    if (ms <= 0) return;
    try {
      await sleep(ms, undefined, { signal: this.abort.signal });
    } catch {
      // aborted by stop()
    }
  }
}
