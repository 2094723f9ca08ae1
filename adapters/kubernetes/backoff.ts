// Exponential backoff with jitter between retries against a failing API server, reset once it
// answers again. Jitter spreads the retries of many watches (and many Portolan replicas) apart.

export interface BackoffOptions {
  readonly initialMs: number;
  readonly maxMs: number;
  /** ± this fraction of the delay, drawn at random. */
  readonly jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 30_000, jitter: 0.2 };

export class Backoff {
  private attempt = 0;

  constructor(
    private readonly options: BackoffOptions = DEFAULT_BACKOFF,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next retry; each call doubles it, up to maxMs. */
  next(): number {
    const base = Math.min(this.options.maxMs, this.options.initialMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    const spread = base * this.options.jitter * (2 * this.random() - 1);
    return Math.max(0, Math.round(base + spread));
  }

  reset(): void {
    this.attempt = 0;
  }
}
