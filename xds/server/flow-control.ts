// Server-wide flow control for pushes. A stream holds a slot from the moment it writes a response
// until gRPC has handed the bytes to the connection (its write callback): at most `concurrency` such
// writes are outstanding at once, the rest wait in FIFO order. A stream that does not drain (a stuck
// client whose HTTP/2 window is full) gives its slot back after `stuckMs`, so it never holds back
// the others; it stays blocked itself, with one response buffered, until it drains. A stream's first
// response also needs a token: from a per-second budget that is always there (the guaranteed rate),
// or beyond it from what the server's load allows (xds/server/admission.ts: an adaptive extra rate,
// and the loop's idle time), so a reconnect storm is admitted at a pace the server keeps up with
// instead of all at once.
import { AdaptiveAdmission, timerLagDelay, type LoopDelay } from './admission.js';

/** One stream's claim on the limiter. */
export interface SlotHolder {
  /** Called when the stream may write; it must call `release` (via the limiter) when its write drains. */
  grant(): void;
  /** Whether the stream has been admitted (its first response was sent); until then it needs a token. */
  readonly admitted: boolean;
  readonly closed: boolean;
}

export interface FlowControlOptions {
  /** Writes outstanding at once across all streams (default 100). */
  readonly concurrency: number;
  /** New streams' first responses per second (default 1000). */
  readonly newStreamsPerSecond: number;
  /** A write that has not drained after this long no longer counts against the limit (default 5 s). */
  readonly stuckMs: number;
  /**
   * New streams beyond `newStreamsPerSecond` are admitted while the event loop's delay stays at or
   * under this (default 50 ms); 0 admits exactly `newStreamsPerSecond`.
   */
  readonly admissionMaxDelayMs?: number;
}

export const DEFAULT_FLOW_CONTROL: FlowControlOptions = {
  concurrency: 100,
  newStreamsPerSecond: 1000,
  stuckMs: 5000,
  admissionMaxDelayMs: 50,
};

export class PushLimiter {
  // Consumed entries are cleared as they are taken: a taken slot must not keep its stream (and
  // everything the stream holds) alive until the next compaction.
  private readonly waiting: (SlotHolder | undefined)[] = [];
  private waitingHead = 0;
  private readonly waitingNew: (SlotHolder | undefined)[] = [];
  private waitingNewHead = 0;
  private readonly active = new Map<SlotHolder, number>();
  private tokens: number;
  private lastRefill: number;
  private refillTimer: NodeJS.Timeout | undefined;
  private readonly stuckTimer: NodeJS.Timeout;
  private readonly admission: AdaptiveAdmission;
  /** The stream takeNew just admitted on idle time, whose grant drain() times. */
  private onIdleTime: SlotHolder | undefined;
  /** Slots given back because the write did not drain in time. */
  stuckReleases = 0;
  /** New streams admitted on the loop's idle time (beyond the guaranteed and extra rates). */
  idleAdmitted = 0;

  /** drain() is running: a nested call (a release inside a grant) only asks it to look again. */
  private draining = false;
  private drainAgain = false;

  /** Called when the last waiting served stream got its slot (new streams are not counted). */
  onQueueEmpty: (() => void) | undefined;

  constructor(
    private readonly options: FlowControlOptions = DEFAULT_FLOW_CONTROL,
    private readonly now: () => number = () => performance.now(),
    loopDelay: LoopDelay = timerLagDelay(),
  ) {
    this.admission = new AdaptiveAdmission(
      {
        baseRate: options.newStreamsPerSecond,
        maxDelayMs: options.admissionMaxDelayMs ?? DEFAULT_FLOW_CONTROL.admissionMaxDelayMs ?? 0,
      },
      now,
      loopDelay,
      () => this.drain(),
    );
    this.tokens = options.newStreamsPerSecond;
    this.lastRefill = now();
    this.stuckTimer = setInterval(() => this.releaseStuck(), Math.max(100, options.stuckMs / 5));
    this.stuckTimer.unref();
  }

  /** Streams waiting for a slot or a token. */
  get queued(): number {
    return this.waiting.length - this.waitingHead + this.waitingNew.length - this.waitingNewHead;
  }

  /** Streams already served that wait for a slot (a push being handed out). */
  get queuedPushes(): number {
    return this.waiting.length - this.waitingHead;
  }

  /** New streams admitted per second now: the guaranteed rate plus what the load allows. */
  get admissionRate(): number {
    return this.admission.rate;
  }

  /** Writes outstanding now. */
  get inFlight(): number {
    return this.active.size;
  }

  /** Asks for a slot; `holder.grant` runs now or when one frees up. */
  acquire(holder: SlotHolder): void {
    if (!holder.admitted) {
      this.waitingNew.push(holder);
    } else {
      this.waiting.push(holder);
    }
    this.drain();
  }

  /** The holder's write drained (or the stream closed): its slot goes to the next in line. */
  release(holder: SlotHolder): void {
    if (!this.active.delete(holder)) return;
    this.drain();
  }

  stop(): void {
    clearInterval(this.stuckTimer);
    if (this.refillTimer) clearTimeout(this.refillTimer);
    this.refillTimer = undefined;
    this.admission.stop();
  }

  private drain(): void {
    // A holder with nothing to write releases its slot inside its grant, which calls drain again:
    // handled by this loop instead of recursing, or a push to ten thousand streams that have
    // nothing new would nest ten thousand calls deep and overflow the stack.
    if (this.draining) {
      this.drainAgain = true;
      return;
    }
    this.draining = true;
    const hadQueue = this.queuedPushes > 0;
    try {
      do {
        this.drainAgain = false;
        while (this.active.size < this.options.concurrency) {
          const next = this.takeExisting() ?? this.takeNew();
          if (!next) break;
          const at = this.now();
          this.active.set(next, at);
          const onIdleTime = next === this.onIdleTime;
          this.onIdleTime = undefined;
          next.grant();
          // Admitted on the loop's idle time: what its first response costs is charged to it.
          if (onIdleTime) this.admission.spendIdle(this.now() - at);
        }
      } while (this.drainAgain);
    } finally {
      this.draining = false;
    }
    if (hadQueue && this.queuedPushes === 0) this.onQueueEmpty?.();
    // New streams wait for a token: the episode's sampler wakes this every few ms while one is under
    // way (admission.ts); otherwise a timer does, when the next guaranteed token is due.
    if (
      this.waitingNewHead < this.waitingNew.length &&
      !this.refillTimer &&
      this.tokens < 1 &&
      !this.admission.inEpisode
    ) {
      const wait = Math.ceil(1000 / this.options.newStreamsPerSecond);
      this.refillTimer = setTimeout(() => {
        this.refillTimer = undefined;
        this.drain();
      }, wait);
    }
  }

  private takeExisting(): SlotHolder | undefined {
    while (this.waitingHead < this.waiting.length) {
      const h = this.waiting[this.waitingHead];
      this.waiting[this.waitingHead++] = undefined;
      this.compact();
      if (h && !h.closed) return h;
    }
    return undefined;
  }

  private takeNew(): SlotHolder | undefined {
    this.refill();
    while (this.waitingNewHead < this.waitingNew.length) {
      const h = this.waitingNew[this.waitingNewHead];
      if (!h || h.closed) {
        this.waitingNew[this.waitingNewHead++] = undefined;
        this.compact();
        continue;
      }
      // The guaranteed tokens first; beyond them, an extra one if the load allows, or idle time.
      if (this.tokens >= 1) {
        this.tokens -= 1;
      } else {
        this.admission.noteDemand();
        if (!this.admission.take()) {
          if (!this.admission.idle) return undefined;
          this.onIdleTime = h;
          this.idleAdmitted += 1;
        }
      }
      this.waitingNew[this.waitingNewHead++] = undefined;
      this.compact();
      return h;
    }
    return undefined;
  }

  private refill(): void {
    const now = this.now();
    const rate = this.options.newStreamsPerSecond;
    this.tokens = Math.min(rate, this.tokens + ((now - this.lastRefill) / 1000) * rate);
    this.lastRefill = now;
  }

  // Queues are arrays with a moving head (shift() is O(n)); reclaim the consumed prefix now and then.
  private compact(): void {
    // An emptied queue starts over (its array would otherwise only grow between compactions).
    if (this.waitingHead === this.waiting.length) this.waiting.length = this.waitingHead = 0;
    if (this.waitingNewHead === this.waitingNew.length) this.waitingNew.length = this.waitingNewHead = 0;
    if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waiting.length) {
      this.waiting.splice(0, this.waitingHead);
      this.waitingHead = 0;
    }
    if (this.waitingNewHead > 1024 && this.waitingNewHead * 2 > this.waitingNew.length) {
      this.waitingNew.splice(0, this.waitingNewHead);
      this.waitingNewHead = 0;
    }
  }

  private releaseStuck(): void {
    const deadline = this.now() - this.options.stuckMs;
    let freed = false;
    for (const [holder, since] of this.active) {
      if (since > deadline && !holder.closed) continue;
      this.active.delete(holder);
      if (!holder.closed) this.stuckReleases += 1;
      freed = true;
    }
    if (freed) this.drain();
  }
}
