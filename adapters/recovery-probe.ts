// Catching up after a registry outage without waiting out the backoff. Watches that fail back off
// exponentially (to 30 s for Consul), so a source back after a long outage could go unread for that
// long. While any watch waits, one shared loop asks the source something cheap at a fixed interval
// (Consul: /v1/status/leader); when a probe succeeds after one failed — the source was seen down,
// and answers again — every waiting watch retries at once. A probe that never fails (the source is
// reachable and only the reads fail: ACLs, a missing service) wakes nobody, so a partial fault does
// not turn every watch's backoff into polling at the probe's interval.
import { setTimeout as sleep } from 'node:timers/promises';

/** One cheap request to the source: resolves when it answers as a healthy source does. */
export type ProbeRequest = (signal: AbortSignal) => Promise<void>;

export const DEFAULT_PROBE_INTERVAL_MS = 1000;

export interface ProbeStats {
  readonly probes: number;
  readonly failures: number;
  /** Times a success after a failure woke the waiting watches. */
  readonly recoveries: number;
}

export class RecoveryProbe {
  private readonly waiters = new Set<() => void>();
  private running = false;
  private readonly abort = new AbortController();
  private probes = 0;
  private failures = 0;
  private recoveries = 0;

  constructor(
    private readonly request: ProbeRequest,
    private readonly intervalMs = DEFAULT_PROBE_INTERVAL_MS,
  ) {}

  /**
   * Resolves after `delayMs` (the caller's backoff), or earlier when the source is seen to come back,
   * or when `signal` aborts.
   */
  async pause(delayMs: number, signal: AbortSignal): Promise<void> {
    if (delayMs <= 0 || signal.aborted || this.abort.signal.aborted) return;
    const done = new AbortController();
    const wake = (): void => done.abort();
    const onAbort = (): void => done.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    this.waiters.add(wake);
    if (!this.running) void this.loop();
    try {
      await sleep(delayMs, undefined, { signal: done.signal });
    } catch {
      // woken (recovery) or aborted
    } finally {
      this.waiters.delete(wake);
      signal.removeEventListener('abort', onAbort);
    }
  }

  stats(): ProbeStats {
    return { probes: this.probes, failures: this.failures, recoveries: this.recoveries };
  }

  stop(): void {
    this.abort.abort();
    for (const wake of [...this.waiters]) wake();
  }

  // One loop for all waiters, only while some wait: a healthy source is never probed.
  private async loop(): Promise<void> {
    this.running = true;
    let sawFailure = false;
    try {
      while (this.waiters.size > 0 && !this.abort.signal.aborted) {
        this.probes++;
        let ok = false;
        try {
          await this.request(this.abort.signal);
          ok = true;
        } catch {
          this.failures++;
          sawFailure = true;
        }
        if (ok && sawFailure) {
          sawFailure = false;
          this.recoveries++;
          for (const wake of [...this.waiters]) wake();
        }
        try {
          await sleep(this.intervalMs, undefined, { signal: this.abort.signal });
        } catch {
          return;
        }
      }
    } finally {
      this.running = false;
    }
  }
}
