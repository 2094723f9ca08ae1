// Bounded waiting for tests: retry a check until it passes or the time is up, then fail saying what
// was awaited and how its last attempt went. The one wait helper of the suite.
import { setTimeout as sleep } from 'node:timers/promises';

export interface EventuallyOptions {
  /** Give up after this long; default 10 s. */
  readonly timeoutMs?: number;
  /** Pause between attempts; default 50 ms. */
  readonly intervalMs?: number;
  /** What is awaited, for the failure message; default the check's source text. */
  readonly what?: string;
}

/**
 * Calls `check` until it neither throws nor returns `false`, and returns what it returned. An
 * assertion (`() => assert.equal(r.hasSynced(), true)`) and a predicate (`() => r.hasSynced()`)
 * both work. On timeout it throws an Error naming what was awaited and the last error or value
 * (the last error is also its `cause`).
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 50, what }: EventuallyOptions = {},
): Promise<Exclude<T, false>> {
  const deadline = Date.now() + timeoutMs;
  let attempts = 0;
  for (;;) {
    attempts++;
    let outcome: { error: unknown } | { value: T };
    try {
      outcome = { value: await check() };
    } catch (error) {
      outcome = { error };
    }
    if ('value' in outcome && outcome.value !== false) return outcome.value as Exclude<T, false>;
    if (Date.now() >= deadline) {
      const last = 'error' in outcome ? `last error: ${describe(outcome.error)}` : 'last value: false';
      throw new Error(
        `eventually: timed out after ${timeoutMs} ms (${attempts} attempts) waiting for ${what ?? sourceOf(check)}; ${last}`,
        'error' in outcome ? { cause: outcome.error } : undefined,
      );
    }
    await sleep(intervalMs);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sourceOf(check: () => unknown): string {
  const text = check.toString().replace(/\s+/g, ' ');
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
