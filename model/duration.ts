// The one duration grammar: Go's (`1.5s`, `100ms`, `1m30s`, as Istio config writes them), with days
// (`7d`) where a caller allows them. Config, flags and the CA each wrap it with their own errors.

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d)/y;
const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Milliseconds, or undefined when `text` does not parse. `0` alone is zero. */
export function durationMs(text: string, { days = false }: { days?: boolean } = {}): number | undefined {
  if (text === '') return undefined;
  if (text === '0') return 0;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const start = PART.lastIndex;
    const m = PART.exec(text);
    if (!m || m.index !== start || (m[2] === 'd' && !days)) return undefined;
    total += Number(m[1]) * (UNIT_MS[m[2] ?? ''] ?? NaN);
  }
  return Number.isFinite(total) ? total : undefined;
}
