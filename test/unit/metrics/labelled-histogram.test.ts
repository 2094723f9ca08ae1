// LabelledHistogram renders exactly what prom-client's Histogram renders for the same observations
// (the /metrics text is a contract), including values on a bound, past every bound, and reset.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { LabelledHistogram } from '../../../metrics/labelled-histogram.js';

const BOUNDS = [0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5];

function pair(): { ours: LabelledHistogram; theirs: Histogram<'type'>; a: Registry; b: Registry } {
  const a = new Registry();
  const b = new Registry();
  const help = 'Time to build one response, by type';
  const ours = new LabelledHistogram('x_seconds', help, 'type', BOUNDS, [a]);
  const theirs = new Histogram({
    name: 'x_seconds',
    help,
    labelNames: ['type'],
    buckets: BOUNDS,
    registers: [b],
  });
  return { ours, theirs, a, b };
}

test('renders the same exposition text as prom-client for the same observations', async () => {
  const { ours, theirs, a, b } = pair();
  const values = [0, 0.00004, 0.00005, 0.0003, 0.001, 0.02, 0.5, 0.7, 3, 0.00011];
  for (const [i, v] of values.entries()) {
    const type = i % 3 === 0 ? 'EDS' : 'CDS';
    ours.labels(type).observe(v);
    theirs.labels({ type }).observe(v);
  }
  assert.equal(await a.metrics(), await b.metrics());
  assert.match(await a.metrics(), /x_seconds_bucket\{le="0.00005",type="CDS"\} 2\n/);
});

test('nothing observed renders no series, and reset forgets the counts', async () => {
  const { ours, theirs, a, b } = pair();
  ours.labels('LDS');
  assert.equal(await a.metrics(), await b.metrics());
  ours.labels('LDS').observe(0.002);
  theirs.labels({ type: 'LDS' }).observe(0.002);
  assert.equal(await a.metrics(), await b.metrics());
  a.resetMetrics();
  b.resetMetrics();
  assert.equal(await a.metrics(), await b.metrics());
  assert.doesNotMatch(await a.metrics(), /x_seconds_count/);
});
