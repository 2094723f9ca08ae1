// The blocking-query loop against a scripted fetch: index handling per Consul's implementation
// notes, backoff on errors, the rate limit, and stop.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BlockingWatch,
  DEFAULT_PACING,
  type BlockingResult,
  type WatchPacing,
} from '../../../adapters/consul/blocking-watch.js';
import { TokenBucket } from '../../../adapters/consul/token-bucket.js';
import { Backoff } from '../../../model/backoff.js';
import { eventually } from '../../support/eventually.js';

const FAST: WatchPacing = {
  backoff: { initialMs: 10, maxMs: 40, jitter: 0.5 },
  rateLimit: { burst: 100, intervalMs: 1 },
};

type Step = BlockingResult<string> | Error;

/** A fetch that answers from a script, recording the index of every request; past the end it blocks. */
function scripted(steps: Step[]) {
  const indexes: bigint[] = [];
  const signals: AbortSignal[] = [];
  const fetch = (index: bigint, signal: AbortSignal): Promise<BlockingResult<string>> => {
    indexes.push(index);
    signals.push(signal);
    const step = steps.shift();
    if (step instanceof Error) return Promise.reject(step);
    if (step) return Promise.resolve(step);
    return new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
  };
  return { fetch, indexes, signals };
}

function recorder() {
  const answers: { body: string; changed: boolean }[] = [];
  const errors: { message: string; n: number }[] = [];
  return {
    answers,
    errors,
    handlers: {
      onAnswer: (body: string, changed: boolean) => answers.push({ body, changed }),
      onError: (e: Error, n: number) => errors.push({ message: e.message, n }),
    },
  };
}

describe('BlockingWatch', () => {
  test('asks first without an index, then with the last X-Consul-Index; an unmoved index is no change', async () => {
    const { fetch, indexes } = scripted([
      { body: 'a', index: 5n },
      { body: 'a', index: 5n },
      { body: 'b', index: 9n },
    ]);
    const r = recorder();
    const watch = new BlockingWatch(fetch, r.handlers, FAST);
    watch.start();
    try {
      await eventually(() => assert.equal(indexes.length, 4));
      assert.deepEqual(indexes, [0n, 5n, 5n, 9n]);
      assert.deepEqual(r.answers, [
        { body: 'a', changed: true },
        { body: 'a', changed: false },
        { body: 'b', changed: true },
      ]);
      assert.equal(watch.stats().index, '9');
    } finally {
      watch.stop();
    }
  });

  test('an index that goes backwards resets to 0: that answer is dropped and the next one is taken', async () => {
    const { fetch, indexes } = scripted([
      { body: 'old', index: 100n },
      { body: 'restored', index: 40n },
      { body: 'current', index: 41n },
    ]);
    const r = recorder();
    const watch = new BlockingWatch(fetch, r.handlers, FAST);
    watch.start();
    try {
      await eventually(() => assert.equal(indexes.length, 4));
      assert.deepEqual(indexes, [0n, 100n, 0n, 41n]);
      assert.deepEqual(
        r.answers.map((a) => a.body),
        ['old', 'current'],
      );
      assert.equal(watch.stats().indexResets, 1);
    } finally {
      watch.stop();
    }
  });

  test('an index of 0 is raised to 1, so the next request blocks instead of returning at once', async () => {
    const { fetch, indexes } = scripted([{ body: 'a', index: 0n }]);
    const watch = new BlockingWatch(fetch, recorder().handlers, FAST);
    watch.start();
    try {
      await eventually(() => assert.equal(indexes.length, 2));
      assert.deepEqual(indexes, [0n, 1n]);
    } finally {
      watch.stop();
    }
  });

  test('errors are reported with the count of consecutive failures, back off, and recovery keeps the index', async () => {
    const { fetch, indexes } = scripted([
      { body: 'a', index: 7n },
      new Error('boom 1'),
      new Error('boom 2'),
      { body: 'b', index: 8n },
      new Error('boom 3'),
    ]);
    const r = recorder();
    const watch = new BlockingWatch(fetch, r.handlers, FAST);
    const started = performance.now();
    watch.start();
    try {
      await eventually(() => assert.equal(indexes.length, 6));
      assert.deepEqual(indexes, [0n, 7n, 7n, 7n, 8n, 8n]);
      assert.deepEqual(r.errors, [
        { message: 'boom 1', n: 1 },
        { message: 'boom 2', n: 2 },
        { message: 'boom 3', n: 1 },
      ]);
      // Backoff before retries 1, 2 and 3: at least 5 + 10 + 5 ms (half of each ceiling).
      assert.ok(performance.now() - started >= 20);
      assert.equal(watch.stats().lastError, 'boom 3');
    } finally {
      watch.stop();
    }
  });

  test('a server that answers at once with a stuck index is rate limited, not busy-looped', async () => {
    let calls = 0;
    const watch = new BlockingWatch(
      async () => {
        calls++;
        return { body: 'same', index: 0n };
      },
      recorder().handlers,
      { backoff: FAST.backoff, rateLimit: { burst: 2, intervalMs: 50 } },
    );
    watch.start();
    await sleep(500);
    watch.stop();
    // 2 at once, then one per 50 ms: about 12 in 500 ms; a busy loop would make thousands.
    assert.ok(calls >= 3 && calls <= 14, `${calls} requests in 500 ms`);
  });

  test('stop aborts the request in flight and no handler runs afterwards', async () => {
    const { fetch, signals } = scripted([{ body: 'a', index: 3n }]);
    const r = recorder();
    const watch = new BlockingWatch(fetch, r.handlers, FAST);
    watch.start();
    await eventually(() => assert.equal(signals.length, 2));
    watch.stop();
    assert.equal(signals[1]?.aborted, true);
    await sleep(30);
    assert.equal(r.errors.length, 0);
    assert.equal(r.answers.length, 1);
  });
});

test('the default backoff: from 250 ms doubling to 30 s, half of each delay random', () => {
  const shortest = new Backoff(DEFAULT_PACING.backoff, () => 0);
  const longest = new Backoff(DEFAULT_PACING.backoff, () => 0.999999);
  const ceilings = [250, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000];
  assert.deepEqual(
    ceilings.map(() => shortest.next()),
    ceilings.map((c) => c / 2),
  );
  assert.deepEqual(
    ceilings.map(() => longest.next()),
    ceilings,
  );
});

describe('TokenBucket', () => {
  test('a burst passes at once; then one token per interval', () => {
    let now = 0;
    const bucket = new TokenBucket({ burst: 2, intervalMs: 1000 }, () => now);
    assert.equal(bucket.take(), 0);
    assert.equal(bucket.take(), 0);
    assert.equal(bucket.take(), 1000);
    now = 1000; // the third request used the token that arrived meanwhile
    assert.equal(bucket.take(), 1000);
    now = 10_000; // a long idle refills to the burst, not beyond
    assert.equal(bucket.take(), 0);
    assert.equal(bucket.take(), 0);
    assert.ok(bucket.take() > 0);
  });
});
