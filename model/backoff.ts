// Exponential backoff with jitter, for every retry loop against a failing source (watches, resyncs,
// certificate requests): the delay grows by `multiplier` per consecutive failure up to `maxMs`, and a
// `jitter` fraction of it is random, so that many watches (or Portolan replicas, or VMs) failing
// together do not retry in lock-step. A success resets it.

export interface BackoffOptions {
  /** The delay after the first failure (before jitter); more than 0. */
  readonly initialMs: number;
  /** The largest delay: no delay is ever longer. At least `initialMs`. */
  readonly maxMs: number;
  /** Growth per consecutive failure (default 2); at least 1. */
  readonly multiplier?: number;
  /**
   * The random fraction of each delay, from 0 (none) to 1: a delay of d is drawn from
   * [d·(1 − jitter), d], so it is never longer than the un-jittered one.
   */
  readonly jitter: number;
}

export class Backoff {
  private failures = 0;

  constructor(
    private readonly options: BackoffOptions,
    /** A source of numbers in [0, 1); tests pass a fixed one. */
    private readonly random: () => number = Math.random,
  ) {
    const { initialMs, maxMs, multiplier = 2, jitter } = options;
    if (!(initialMs > 0) || !(maxMs >= initialMs) || !(multiplier >= 1) || !(jitter >= 0 && jitter <= 1))
      throw new RangeError(`invalid backoff ${JSON.stringify(options)}`);
  }

  /** The delay before the next attempt, counting one more failure (whole milliseconds). */
  next(): number {
    const { initialMs, maxMs, multiplier = 2, jitter } = this.options;
    // multiplier ** failures may overflow to Infinity; the cap still applies.
    const ceiling = Math.min(maxMs, initialMs * multiplier ** this.failures);
    this.failures++;
    return Math.round(ceiling * (1 - jitter + jitter * this.random()));
  }

  /** After a success: the next failure waits `initialMs` again. */
  reset(): void {
    this.failures = 0;
  }

  get consecutiveFailures(): number {
    return this.failures;
  }
}
