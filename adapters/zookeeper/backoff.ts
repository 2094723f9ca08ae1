// Exponential backoff with jitter for retrying a failed resync: a failing ZooKeeper is not hammered,
// and several Portolan replicas do not retry in lockstep.

export class Backoff {
  private attempt = 0;

  constructor(
    private readonly initialMs = 250,
    private readonly maxMs = 30_000,
  ) {}

  /** The delay before the next attempt: doubling from `initialMs` up to `maxMs`, then 50–100% of that. */
  next(): number {
    const ceiling = Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.round(ceiling * (0.5 + Math.random() * 0.5));
  }

  reset(): void {
    this.attempt = 0;
  }
}
