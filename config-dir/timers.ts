// The clock and timers the config directory's waits run on: the watcher's quiet period and
// recheck, and the read again of files found emptied. Real ones in the product; a test may give
// its own to run them without waiting.
/** What setTimeout returned, for clearTimeout (a real timer, or a test clock's own). */
export type TimerHandle = unknown;

export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const REAL_TIMERS: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout> | undefined),
};

/** Resolves after `ms` on `timers`. */
export function waitOn(timers: Timers, ms: number): Promise<void> {
  return new Promise((resolve) => timers.setTimeout(resolve, ms));
}
