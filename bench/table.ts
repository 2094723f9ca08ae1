// Small helpers for benchmark output: percentiles, a plain-text table, and the tables kept in
// docs/benchmarks.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

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

/** The rows as a Markdown table (columns from the first row). */
export function markdownTable(rows: readonly Record<string, string>[]): string {
  const cols = Object.keys(rows[0] ?? {});
  return [
    `| ${cols.join(' | ')} |`,
    `| ${cols.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${cols.map((c) => r[c] ?? '').join(' | ')} |`),
  ].join('\n');
}

/**
 * Replaces what stands between `<!-- NAME:begin -->` and `<!-- NAME:end -->` in docs/benchmarks.md
 * with `content`; a page without those markers is left as it is.
 */
export function writeDocSection(name: string, content: string): void {
  const path = fileURLToPath(new URL('../../docs/benchmarks.md', import.meta.url));
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const doc = readFileSync(path, 'utf8');
  const start = doc.indexOf(begin);
  const stop = doc.indexOf(end);
  if (start < 0 || stop < start) return;
  writeFileSync(
    path,
    `${doc.slice(0, start)}${begin}\n\n${content}\n\n${end}${doc.slice(stop + end.length)}`,
  );
}
