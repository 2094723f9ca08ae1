// Durations for certificate and token lifetimes: `90s`, `30m`, `1h`, `7d`, or combined `1h30m`.

export class DurationError extends Error {}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3600_000, d: 86400_000 };

export function parseDuration(text: string, what: string): number {
  const trimmed = text.trim();
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(trimmed); m; m = re.exec(trimmed)) {
    total += Number(m[1]) * (UNIT_MS[m[2] ?? 's'] ?? 0);
    matched = re.lastIndex;
  }
  if (!trimmed || matched !== trimmed.length || total <= 0)
    throw new DurationError(`${what}: expected a duration like 90s, 30m, 1h or 7d, got "${text}"`);
  return Math.round(total);
}
