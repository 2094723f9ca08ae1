// A clock that moves only when the test says (model/clock.ts): `advance` runs, in time order, every
// timer that falls due, including those the callbacks set within the same advance. Product timers
// (a grace period, a batching interval) are then driven without waiting and without races.
import type { Clock } from '../../model/clock.js';

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

export class ManualClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: Timer[] = [];

  /** `start`: the epoch milliseconds it starts at (default: a fixed date, so output is stable). */
  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  after(ms: number, fn: () => void): () => void {
    const timer: Timer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  /** Moves the clock `ms` on, running each timer due by then at its own time. */
  advance(ms: number): void {
    const until = this.current + ms;
    // Bounded: a timer that re-arms itself for 0 ms would otherwise loop forever.
    for (let fired = 0; fired < 100_000; fired++) {
      const next = this.due(until);
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = next.at;
      next.fn();
    }
    this.current = until;
  }

  /** Timers set and neither fired nor cancelled. */
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  private due(until: number): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.timers)
      if (
        !t.cancelled &&
        t.at <= until &&
        (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq))
      )
        best = t;
    return best;
  }
}
