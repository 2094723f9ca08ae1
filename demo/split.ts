// The traffic split the demo prints every second: calls per backend over a rolling window of the
// last few seconds, as "12:00:01  100 calls (last 5 s)  v1@127.0.0.1:50051 80% (80) | v2@… 20% (20)".
// One second's 20 calls swing from 63 % to 95 % at 80/20 by chance alone; 100 calls stay within a
// few points, and an edit still shows within a second, fully after the window.
import type { CallResult } from './client.js';

export interface SplitWindow {
  readonly at: Date;
  readonly calls: number;
  /** The seconds the window spans (fewer at the start). */
  readonly seconds: number;
  /** Calls answered, per backend name. */
  readonly byBackend: ReadonlyMap<string, number>;
  /** Failed calls, by their first error line. */
  readonly errors: ReadonlyMap<string, number>;
}

export const SPLIT_WINDOW_SECONDS = 5;

interface Bucket {
  readonly byBackend: Map<string, number>;
  readonly errors: Map<string, number>;
}

const emptyBucket = (): Bucket => ({ byBackend: new Map(), errors: new Map() });

export class SplitCounter {
  private current = emptyBucket();
  /** The previous buckets, newest last; at most `seconds - 1`. */
  private readonly past: Bucket[] = [];

  constructor(private readonly seconds = SPLIT_WINDOW_SECONDS) {}

  add(result: CallResult): void {
    const [map, key] =
      'backend' in result ? [this.current.byBackend, result.backend] : [this.current.errors, result.error];
    map.set(key, (map.get(key) ?? 0) + 1);
  }

  /** Called once a second: the calls of the last `seconds` takes, and a fresh bucket. */
  take(at = new Date()): SplitWindow {
    const buckets = [...this.past, this.current];
    this.past.push(this.current);
    if (this.past.length > this.seconds - 1) this.past.shift();
    this.current = emptyBucket();
    const byBackend = merge(buckets.map((b) => b.byBackend));
    const errors = merge(buckets.map((b) => b.errors));
    return { at, calls: sum(byBackend) + sum(errors), seconds: buckets.length, byBackend, errors };
  }
}

function merge(maps: readonly ReadonlyMap<string, number>[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const map of maps) for (const [k, n] of map) out.set(k, (out.get(k) ?? 0) + n);
  return out;
}

/** One line per window; `backends` (the running ones) are listed even when they got nothing. */
export function formatWindow(w: SplitWindow, backends: readonly string[]): string {
  const time = w.at.toTimeString().slice(0, 8);
  if (w.calls === 0) return `${time}  0 calls (the client is starting, or waiting for its xDS config)`;
  const names = [...new Set([...backends, ...w.byBackend.keys()])].sort();
  const pct = (n: number): string => `${Math.round((100 * n) / w.calls)}%`;
  const parts = names.map((name) => {
    const n = w.byBackend.get(name) ?? 0;
    return `${name} ${pct(n)} (${n})`;
  });
  const failed = sum(w.errors);
  if (failed > 0) {
    const [first] = [...w.errors.keys()];
    parts.push(`errors ${pct(failed)} (${failed}: ${first})`);
  }
  return `${time}  ${w.calls} calls (last ${w.seconds} s)  ${parts.join(' | ')}`;
}

function sum(map: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const n of map.values()) total += n;
  return total;
}
