// Small helpers for benchmark output: percentiles and a plain-text table.

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

export function summarize(samples: readonly number[]): Record<string, string> {
  const s = [...samples].sort((a, b) => a - b);
  const f = (n: number): string => n.toFixed(1);
  return {
    n: String(s.length),
    p50: f(percentile(s, 50)),
    p90: f(percentile(s, 90)),
    max: f(s[s.length - 1] ?? NaN),
  };
}

export function printTable(title: string, rows: readonly Record<string, string>[]): void {
  const first = rows[0];
  if (!first) return;
  const cols = Object.keys(first);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((c, i) => c.padEnd(width[i] ?? 0)).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(cols));
  console.log(line(width.map((w) => '-'.repeat(w))));
  for (const r of rows) console.log(line(cols.map((c) => r[c] ?? '')));
}
