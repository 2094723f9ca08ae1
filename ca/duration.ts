// Durations for certificate and token lifetimes: `90s`, `30m`, `1h`, `7d`, or combined `1h30m`.

import { durationMs } from '../model/duration.js';

export class DurationError extends Error {}

export function parseDuration(text: string, what: string): number {
  const total = durationMs(text.trim(), { days: true });
  if (total === undefined || total <= 0)
    throw new DurationError(`${what}: expected a duration like 90s, 30m, 1h or 7d, got "${text}"`);
  return Math.round(total);
}
