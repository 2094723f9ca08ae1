// Times and durations for people.

export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.floor(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  const d = Math.floor(h / 24);
  if (d < 365) return `${d}d ${h % 24}h`;
  return `${(d / 365.25).toFixed(1)} years`;
}

/** `3m 12s ago`, or `in 2d 4h` for a time ahead. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const d = now - t;
  return d >= 0 ? `${duration(d)} ago` : `in ${duration(-d)}`;
}

/**
 * Local clock time, HH:MM:SS, with the date as YYYY-MM-DD when it is not today: one format on every
 * page (the browser's locale formats mixed 12/1/2026 with 2026-12-01).
 */
export function clock(iso: string | null | undefined, seconds = true): string {
  if (!iso) return '-';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const two = (n: number): string => String(n).padStart(2, '0');
  const time = `${two(d.getHours())}:${two(d.getMinutes())}${seconds ? `:${two(d.getSeconds())}` : ''}`;
  const date = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  return d.toDateString() === new Date().toDateString() ? time : `${date} ${time}`;
}

export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined) return '-';
  return value < 10 ? `${value.toFixed(1)} ms` : duration(value);
}
