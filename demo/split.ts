// The traffic split the demo prints: calls per backend over the last window (one second), as
// "12:00:01  40 calls  v1@127.0.0.1:50051 80% (32) | v2@127.0.0.2:50051 20% (8)".
import type { CallResult } from './client.js';

export interface SplitWindow {
  readonly at: Date;
  readonly calls: number;
  /** Calls answered, per backend name. */
  readonly byBackend: ReadonlyMap<string, number>;
  /** Failed calls, by their first error line. */
  readonly errors: ReadonlyMap<string, number>;
}

export class SplitCounter {
  private byBackend = new Map<string, number>();
  private errors = new Map<string, number>();

  add(result: CallResult): void {
    const [map, key] = 'backend' in result ? [this.byBackend, result.backend] : [this.errors, result.error];
    map.set(key, (map.get(key) ?? 0) + 1);
  }

  /** The calls since the last take, and a fresh window. */
  take(at = new Date()): SplitWindow {
    const window: SplitWindow = {
      at,
      calls: sum(this.byBackend) + sum(this.errors),
      byBackend: this.byBackend,
      errors: this.errors,
    };
    this.byBackend = new Map();
    this.errors = new Map();
    return window;
  }
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
  return `${time}  ${w.calls} calls  ${parts.join(' | ')}`;
}

function sum(map: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const n of map.values()) total += n;
  return total;
}
