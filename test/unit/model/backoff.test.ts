// The one Backoff every retry loop uses: growth, cap, jitter bounds (with an injected random
// source, so every delay is exact), reset, and the options it refuses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Backoff, type BackoffOptions } from '../../../model/backoff.js';

const HALF_RANDOM: BackoffOptions = { initialMs: 100, maxMs: 1000, jitter: 0.5 };

function delays(backoff: Backoff, n: number): number[] {
  return Array.from({ length: n }, () => backoff.next());
}

test('doubles per failure up to the cap; with jitter 0.5 a delay is between half and all of it', () => {
  assert.deepEqual(delays(new Backoff(HALF_RANDOM, () => 0), 6), [50, 100, 200, 400, 500, 500]);
  assert.deepEqual(delays(new Backoff(HALF_RANDOM, () => 0.999999), 6), [100, 200, 400, 800, 1000, 1000]);
  assert.deepEqual(delays(new Backoff(HALF_RANDOM, () => 0.5), 3), [75, 150, 300]);
});

test('without jitter the delays are exact; the multiplier sets the growth', () => {
  const options = { initialMs: 1000, maxMs: 60_000, jitter: 0 };
  assert.deepEqual(
    delays(new Backoff(options, () => 0.7), 8),
    [1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000],
  );
  assert.deepEqual(delays(new Backoff({ ...options, multiplier: 1.5 }), 4), [1000, 1500, 2250, 3375]);
  assert.deepEqual(delays(new Backoff({ ...options, multiplier: 1 }), 3), [1000, 1000, 1000]);
});

test('jitter draws from the random source on every delay', () => {
  const draws = [0, 1 - 1e-9, 0.25];
  const backoff = new Backoff({ initialMs: 1000, maxMs: 1000, jitter: 0.2 }, () => draws.shift() ?? 0);
  assert.deepEqual(delays(backoff, 3), [800, 1000, 850]);
});

test('reset after a success starts again from the initial delay and counts no failures', () => {
  const backoff = new Backoff(HALF_RANDOM, () => 0.999999);
  delays(backoff, 4);
  assert.equal(backoff.consecutiveFailures, 4);
  backoff.reset();
  assert.equal(backoff.consecutiveFailures, 0);
  assert.equal(backoff.next(), 100);
  assert.equal(backoff.consecutiveFailures, 1);
});

test('stays at the cap however many failures there were', () => {
  const backoff = new Backoff({ initialMs: 1, maxMs: 30_000, jitter: 0 });
  for (let i = 0; i < 5000; i++) backoff.next();
  assert.equal(backoff.next(), 30_000);
});

test('refuses options that would make no sense', () => {
  const bad: BackoffOptions[] = [
    { initialMs: 0, maxMs: 10, jitter: 0 },
    { initialMs: 10, maxMs: 5, jitter: 0 },
    { initialMs: 10, maxMs: 20, multiplier: 0.5, jitter: 0 },
    { initialMs: 10, maxMs: 20, jitter: -0.1 },
    { initialMs: 10, maxMs: 20, jitter: 1.5 },
    { initialMs: Number.NaN, maxMs: 20, jitter: 0 },
  ];
  for (const options of bad) assert.throws(() => new Backoff(options), RangeError, JSON.stringify(options));
});
