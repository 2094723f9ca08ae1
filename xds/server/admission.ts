// New-stream admission beyond the guaranteed rate, adapted to load. The flow control's token bucket
// (`--push-new-streams-per-second`) is the floor: always admitted, whatever the load. Above it, two
// things admit more while a storm lasts:
// - An extra rate that grows while the event loop keeps up and shrinks when it does not, like TCP
//   congestion control with the loop's delay as the loss signal: slow start (the extra rate doubles
//   each window, starting at the guaranteed rate) until the first overloaded window, then additive
//   increase (one guaranteed rate per window) and multiplicative decrease (halved, its unspent tokens
//   dropped). The loop's delay lags the admissions that cause it, so what one window can let through
//   is bounded: at most one window's worth of the extra rate, which itself never exceeds
//   CEILING_FACTOR − 1 times the guaranteed rate.
// - Idle time: a stream kept waiting while the loop has nothing to do is pure loss. Each time the
//   sampler's timer fires on time (the loop was idle), new streams may use IDLE_SLICE_MS of the loop
//   for their first responses, measured, not counted: cheap proxyless streams go by the dozen, a
//   costly one alone. A late sample (the loop is busy) takes that allowance away again.
// An episode starts when a new stream has to wait for a guaranteed token and ends four windows after
// the last such wait: the extra rate drops to 0 and the sampler stops, so a server without a storm
// runs no timer for this. Within an episode the sampler's tick is also when waiting streams are
// admitted (the tokens accrued since the last tick, guaranteed and extra, and idle time): one timer
// for the storm, every SAMPLE_MS, rather than a wake-up per token.

/** How late the event loop has been running: the worst lateness since the last reading. */
export interface LoopDelay {
  /** Starts measuring; idempotent. `onSample` hears how late each sample fired, in ms. */
  start(onSample?: (lateMs: number) => void): void;
  stop(): void;
  /** The longest delay seen since the previous reading (or start), in ms; the next reading starts afresh. */
  takeMaxMs(): number;
}

/** Total admission never exceeds this many times the guaranteed rate. */
export const CEILING_FACTOR = 10;

/** The length of one measurement window: the extra rate is adjusted once per window. */
export const ADMISSION_WINDOW_MS = 50;

/** How late a sample may fire and still show an idle loop. */
export const IDLE_LATE_MS = 1;

/** The loop time (ms) new streams may use beyond their tokens after each sample that shows it idle. */
export const IDLE_SLICE_MS = 1;

/** The sampler's period during an episode: the idle allowance can be at most half the loop's time. */
export const SAMPLE_MS = 2;

export interface AdmissionOptions {
  /** The guaranteed rate (new streams per second). */
  readonly baseRate: number;
  /** Loop delay above which the server counts as overloaded; 0 turns the adaptive part off. */
  readonly maxDelayMs: number;
  readonly windowMs?: number;
}

export class AdaptiveAdmission {
  private extraRate = 0;
  private extraTokens = 0;
  private slowStart = true;
  private active = false;
  private windowStart = 0;
  private lastAccrual = 0;
  private lastDemand = 0;
  private expiry: NodeJS.Timeout | undefined;
  /** Loop time new streams may still use from the latest idle sample. */
  private idleMs = 0;
  readonly windowMs: number;
  private readonly staleMs: number;
  private readonly ceiling: number;

  constructor(
    private readonly options: AdmissionOptions,
    private readonly now: () => number,
    private readonly delay: LoopDelay,
    /** Called on every sample of an episode: waiting streams may have tokens or idle time now. */
    private readonly wake: () => void = () => {},
  ) {
    this.windowMs = options.windowMs ?? ADMISSION_WINDOW_MS;
    this.staleMs = 4 * this.windowMs;
    this.ceiling = (CEILING_FACTOR - 1) * options.baseRate;
  }

  get enabled(): boolean {
    return this.options.maxDelayMs > 0;
  }

  /** Whether an episode is under way (its sampler then wakes the limiter every SAMPLE_MS). */
  get inEpisode(): boolean {
    return this.active;
  }

  /** New streams per second admitted now: the guaranteed rate plus the extra the load allows. */
  get rate(): number {
    return this.options.baseRate + this.extraRate;
  }

  /**
   * A new stream is waiting and the guaranteed tokens are spent. Starts an episode (and the
   * sampler) if none is running; one ends a few windows after the last demand.
   */
  noteDemand(): void {
    if (!this.enabled) return;
    const now = this.now();
    if (this.active && now - this.lastDemand > this.staleMs) this.reset();
    this.lastDemand = now;
    if (this.active) return;
    this.active = true;
    this.delay.start((lateMs) => this.sampled(lateMs));
    this.delay.takeMaxMs(); // what happened before the episode does not count
    this.windowStart = this.lastAccrual = now;
    this.expiry = setInterval(() => {
      if (this.now() - this.lastDemand > this.staleMs) this.reset();
    }, this.staleMs);
    this.expiry.unref();
  }

  /** Spends one extra token if there is one. */
  take(): boolean {
    this.update();
    if (this.extraTokens < 1) return false;
    this.extraTokens -= 1;
    return true;
  }

  /** Whether idle time is on offer: a new stream may go now, its first response charged with `spendIdle`. */
  get idle(): boolean {
    return this.active && this.idleMs > 0;
  }

  /** Charges `ms` of loop time, spent on a stream admitted through `idle`. */
  spendIdle(ms: number): void {
    this.idleMs -= ms;
  }

  /** Ends the episode (the limiter stops). */
  stop(): void {
    this.reset();
  }

  private update(): void {
    if (!this.active) return;
    const now = this.now();
    // Unspent tokens are kept up to one window's worth: a lagging signal lets through at most that.
    this.extraTokens = Math.min(
      (this.extraRate * this.windowMs) / 1000,
      this.extraTokens + ((now - this.lastAccrual) / 1000) * this.extraRate,
    );
    this.lastAccrual = now;
    if (now - this.windowStart < this.windowMs) return;
    this.windowStart = now;
    if (this.delay.takeMaxMs() > this.options.maxDelayMs) {
      this.extraRate = Math.floor(this.extraRate / 2);
      this.extraTokens = 0;
      this.slowStart = false;
    } else {
      const base = this.options.baseRate;
      const grown = this.slowStart ? Math.max(base, this.extraRate * 2) : this.extraRate + base;
      this.extraRate = Math.min(this.ceiling, grown);
    }
  }

  private sampled(lateMs: number): void {
    if (!this.active) return;
    // Not added up: an allowance is for the idle moment that earned it.
    this.idleMs = lateMs <= IDLE_LATE_MS ? IDLE_SLICE_MS : 0;
    this.wake();
  }

  private reset(): void {
    if (this.active) this.delay.stop();
    if (this.expiry) clearInterval(this.expiry);
    this.expiry = undefined;
    this.active = false;
    this.extraRate = 0;
    this.extraTokens = 0;
    this.idleMs = 0;
    this.slowStart = true;
  }
}

/**
 * A timer-lag sampler: a timer every `resolutionMs` notes how late it fires. Runs only while started
 * (an admission episode). A stall that spans a reading is still caught by the next tick.
 */
export function timerLagDelay(
  resolutionMs = SAMPLE_MS,
  now: () => number = () => performance.now(),
): LoopDelay {
  let timer: NodeJS.Timeout | undefined;
  let last = 0;
  let max = 0;
  return {
    start(onSample) {
      if (timer) return;
      last = now();
      timer = setInterval(() => {
        const t = now();
        const late = Math.max(0, t - last - resolutionMs);
        max = Math.max(max, late);
        last = t;
        onSample?.(late);
      }, resolutionMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      max = 0;
    },
    takeMaxMs() {
      const m = max;
      max = 0;
      return m;
    },
  };
}
