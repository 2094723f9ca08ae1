// Plain-text tables for the CLI: a header row, columns padded to their widest cell, long cells clipped.

export function formatTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  { indent = '', maxCell = 120 }: { indent?: string; maxCell?: number } = {},
): string {
  const clip = (s: string): string => (s.length > maxCell ? `${s.slice(0, maxCell - 1)}…` : s);
  const all = [header, ...rows.map((r) => r.map(clip))];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((row) =>
      `${indent}${row
        .map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join('  ')}`.trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** A duration for people: 850ms, 4.2s, 3m12s, 2h05m, 3d04h. */
export function humanDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.floor(s)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}
