// Exponential backoff with jitter for a failing watch: the delay doubles per consecutive failure up
// to a cap, and half of it is random so that a thousand watches failing together (Consul down) do
// not retry in lock-step, while never retrying at once in a tight loop.

export interface BackoffOptions {
  /** Delay ceiling after the first failure. */
  readonly baseMs: number;
  /** Largest delay ceiling. */
  readonly maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 250, maxMs: 30_000 };

export class Backoff {
  private failures = 0;

  constructor(
    private readonly options: BackoffOptions = DEFAULT_BACKOFF,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt, after one more failure: in [ceiling/2, ceiling). */
  next(): number {
    const ceiling = Math.min(this.options.maxMs, this.options.baseMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    return ceiling / 2 + (this.random() * ceiling) / 2;
  }

  reset(): void {
    this.failures = 0;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }
}
