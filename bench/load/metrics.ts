// What a benchmark reads of a server's /metrics (prom-client's text format).

/** The text of `base`/metrics. */
export async function metricsText(base: string): Promise<string> {
  return (await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
}

/** The value of the first sample named exactly `name` (with its labels, if given: `name{…}`); NaN if none. */
export function sample(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

/** The server's JS heap in use (prom-client: nodejs_heap_size_used_bytes, prefixed portolan_). */
export async function heapUsedBytes(base: string): Promise<number> {
  return sample(await metricsText(base), 'portolan_nodejs_heap_size_used_bytes');
}

/** The server's garbage collections so far (prom-client's nodejs_gc_duration_seconds counts). */
export interface GcCounts {
  readonly scavenges: number;
  readonly full: number;
  /** The young generation's current size (nodejs_heap_space_size_total_bytes{space="new"}). */
  readonly newSpaceBytes: number;
}

export async function gcCounts(base: string): Promise<GcCounts> {
  const text = await metricsText(base);
  return {
    scavenges: sample(text, 'portolan_nodejs_gc_duration_seconds_count{kind="minor"}'),
    full: sample(text, 'portolan_nodejs_gc_duration_seconds_count{kind="major"}'),
    newSpaceBytes: sample(text, 'portolan_nodejs_heap_space_size_total_bytes{space="new"}'),
  };
}
