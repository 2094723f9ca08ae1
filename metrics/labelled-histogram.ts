// A Prometheus histogram with one label, for values observed per response: a child per label value
// holds plain bucket counts, so an observation is a comparison loop and three additions. prom-client's
// Histogram hashes the label set on every observe (a tenth of building a shared response before);
// this one is read the same way (a metric of the prom-client registry: it implements `get`) and
// renders the same series: cumulative `_bucket{le}` per bound and `+Inf`, then `_sum` and `_count`.
import type { Metric, Registry } from 'prom-client';

/** One sample as prom-client's registry renders it. */
interface Sample {
  readonly metricName: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/** One label value's counts. */
export class HistogramChild {
  /** Per bucket (the last one past every bound), not cumulative. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] ?? Infinity)) i++;
    this.counts[i] = (this.counts[i] ?? 0) + 1;
    this.sum += value;
    this.count += 1;
  }
}

export class LabelledHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly children = new Map<string, HistogramChild>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly label: string,
    private readonly bounds: readonly number[],
    registers: readonly Registry[],
  ) {
    // The registry reads any object with name, help, type, aggregator, get and reset; its type
    // names only prom-client's own classes.
    for (const r of registers) r.registerMetric(this as unknown as Metric);
  }

  /** The child of `value` for the label (made on first use; keep it and observe on it). */
  labels(value: string): HistogramChild {
    let child = this.children.get(value);
    if (!child) this.children.set(value, (child = new HistogramChild(this.bounds)));
    return child;
  }

  reset(): void {
    for (const c of this.children.values()) {
      c.counts.fill(0);
      c.sum = 0;
      c.count = 0;
    }
  }

  get(): Promise<{ name: string; help: string; type: 'histogram'; values: Sample[]; aggregator: 'sum' }> {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const [value, c] of this.children) {
      if (c.count === 0) continue;
      const labels = { [this.label]: value };
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += c.counts[i] ?? 0;
        values.push({ metricName: bucket, labels: { le, ...labels }, value: acc });
      });
      values.push(
        { metricName: bucket, labels: { le: '+Inf', ...labels }, value: c.count },
        { metricName: `${this.name}_sum`, labels, value: c.sum },
        { metricName: `${this.name}_count`, labels, value: c.count },
      );
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: 'histogram',
      values,
      aggregator: 'sum',
    });
  }
}
