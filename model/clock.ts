// Time as the product's own timers use it (grace periods, batching intervals, retry windows), passed
// in so that tests drive it: production runs on the system clock; a test hands a manual clock
// (test/support/manual-clock.ts) and moves it on instead of sleeping.
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Runs `fn` once, `ms` from now; the returned function cancels it. `unref`: the timer does not
   * keep the process alive on its own.
   */
  after(ms: number, fn: () => void, options?: { readonly unref?: boolean }): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fn, options) {
    const timer = setTimeout(fn, ms);
    if (options?.unref) timer.unref();
    return () => clearTimeout(timer);
  },
};
