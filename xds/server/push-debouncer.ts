// Merges change events into pushes. A batch opens with its first event and closes when no event has
// arrived for the quiet period, or when it has been open for the batch bound, whichever is first;
// the maximum delay caps both. A due batch also waits while the previous push is still being handed
// out to streams (flow control's queue is not empty), so pushes never pile up behind each other.
// Istio's scheme (quiet period, else the maximum delay) pushes only once per maximum delay while
// changes keep arriving faster than the quiet period; bounding the batch at twice the quiet period
// keeps the cadence near the quiet period under steady churn instead.
//
// An event its source already debounced (the config directory reads a file only after a quiet
// period of its own: `trigger.debounced`) does not wait for a second quiet period when pushes are
// idle (none went out during the last quiet period): a batch of only such events is then due at
// once, and goes after the current callbacks (setImmediate), so what the same reload publishes still
// joins it. Waiting twice cost an edit 100 ms and one more timer wake-up. Under churn such batches
// wait as any other: a push per edit would cost each stream's connection a write, and the client an
// ACK, that batched edits share.
import { mergeChanges, type ChangeEvent } from '../../model/change.js';

export interface DebounceOptions {
  /** Push after this long without a new event (default 100 ms; 0 pushes every event at once). */
  readonly quietMs: number;
  /** No event waits longer than this (default 10 s). */
  readonly maxDelayMs: number;
}

/** What one flush carries: the merged event and when its first part was seen. */
export interface MergedChange {
  readonly event: ChangeEvent;
  /** performance.now() of the first event in the batch. */
  readonly firstSeen: number;
  /** How many events were merged. */
  readonly merged: number;
}

export const DEFAULT_DEBOUNCE: DebounceOptions = { quietMs: 100, maxDelayMs: 10_000 };

export class PushDebouncer {
  private pending: ChangeEvent | undefined;
  private firstSeen = 0;
  private lastSeen = 0;
  private merged = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /** When the last batch went (performance.now() time). */
  private lastPush = -Infinity;
  private readonly batchBoundMs: number;
  /** A due batch is waiting for the previous push to be handed out (see `ready`). */
  private held = false;

  /**
   * `ready` says whether the previous push has been handed to every stream; a due batch waits for
   * it (until the maximum delay) and goes out on `resume`. Under overload, pushes then follow the
   * fan-out's pace instead of piling up behind it.
   */
  constructor(
    private readonly options: DebounceOptions,
    private readonly flush: (change: MergedChange) => void,
    private readonly now: () => number = () => performance.now(),
    private readonly ready: () => boolean = () => true,
  ) {
    this.batchBoundMs = Math.min(options.maxDelayMs, 2 * options.quietMs);
  }

  add(event: ChangeEvent): void {
    const now = this.now();
    if (!this.pending) {
      this.firstSeen = now;
      this.merged = 0;
    }
    this.pending = this.pending ? mergeChanges(this.pending, event) : event;
    this.lastSeen = now;
    this.merged += 1;
    if (this.options.quietMs <= 0 || this.options.maxDelayMs <= 0) return this.fire();
    this.arm();
  }

  stop(): void {
    this.disarm();
    this.held = false;
    this.pending = undefined;
  }

  /** When the pending batch will close (performance.now() time), or undefined when none is pending. */
  dueAt(): number | undefined {
    if (!this.pending) return undefined;
    // Merged triggers stay debounced only if every part was (mergeTriggers). Only when pushes are
    // idle: under churn, batches keep sharing one push's writes and timers.
    if (this.pending.trigger?.debounced && this.firstSeen - this.lastPush >= this.options.quietMs)
      return this.firstSeen;
    return Math.min(this.lastSeen + this.options.quietMs, this.firstSeen + this.batchBoundMs);
  }

  // One timer, re-armed lazily: when it fires early (the batch was extended), it sets itself again.
  private arm(): void {
    if (this.timer || this.immediate) return;
    const due = this.dueAt();
    if (due === undefined) return;
    const wait = due - this.now();
    if (wait <= 0) this.immediate = setImmediate(() => this.onTimer());
    else this.timer = setTimeout(() => this.onTimer(), wait);
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  private onTimer(): void {
    this.timer = undefined;
    this.immediate = undefined;
    const due = this.dueAt();
    if (due === undefined) return;
    // setTimeout may fire a fraction of a millisecond early; anything within 1 ms is due.
    if (due - this.now() > 1) return this.arm();
    const overdue = this.now() - this.firstSeen >= this.options.maxDelayMs - 1;
    if (!this.ready() && !overdue) {
      this.held = true;
      this.timer = setTimeout(
        () => this.onTimer(),
        Math.max(0, this.firstSeen + this.options.maxDelayMs - this.now()),
      );
      return;
    }
    this.fire();
  }

  /** The previous push has been handed out: a held batch goes now. */
  resume(): void {
    if (this.held && this.pending) this.fire();
  }

  private fire(): void {
    this.disarm();
    this.held = false;
    const event = this.pending;
    this.pending = undefined;
    this.lastPush = this.now();
    if (event) this.flush({ event, firstSeen: this.firstSeen, merged: this.merged });
  }
}
