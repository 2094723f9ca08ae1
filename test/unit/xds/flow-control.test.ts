// Server-wide push flow control: the write limit, FIFO hand-over, stuck writers, new-stream rate.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PushLimiter, type FlowControlOptions, type SlotHolder } from '../../../xds/server/flow-control.js';
import { MAX_HELD_ROUNDS, StreamPump } from '../../../xds/server/stream-pump.js';
import { CLUSTER } from '../../../xds/proto/type-urls.js';

function holder(name: string, granted: string[], admitted = true): SlotHolder & { closed: boolean } {
  return {
    admitted,
    closed: false,
    grant: () => granted.push(name),
  };
}

function limiter(
  t: TestContext,
  options: Partial<FlowControlOptions> = {},
  now: () => number = () => performance.now(),
) {
  const l = new PushLimiter({ concurrency: 2, newStreamsPerSecond: 1000, stuckMs: 5000, ...options }, now);
  t.after(() => l.stop());
  return l;
}

test('at most `concurrency` writes are outstanding; a release hands the slot to the next in line', (t) => {
  const l = limiter(t);
  const granted: string[] = [];
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => holder(n, granted));
  for (const h of [a, b, c, d]) if (h) l.acquire(h);
  assert.deepEqual(granted, ['a', 'b']);
  assert.equal(l.queued, 2);
  if (a) l.release(a);
  assert.deepEqual(granted, ['a', 'b', 'c']);
  if (b) l.release(b);
  assert.deepEqual(granted, ['a', 'b', 'c', 'd']);
  assert.equal(l.queued, 0);
});

test('holders that release inside their grant are served in a loop, not by recursion (a push to 50,000 idle streams)', (t) => {
  // A stream with nothing to send gives its slot back from inside its grant; each release used to
  // drain again, one stack frame per stream, and a mesh-wide change to 10,000 streams overflowed it.
  const l = limiter(t, { concurrency: 1 });
  let granted = 0;
  const blocker = holder('blocker', []);
  l.acquire(blocker);
  const idle: SlotHolder[] = Array.from({ length: 50_000 }, () => {
    const h: SlotHolder = {
      admitted: true,
      closed: false,
      grant: () => {
        granted += 1;
        l.release(h);
      },
    };
    return h;
  });
  for (const h of idle) l.acquire(h);
  l.release(blocker);
  assert.equal(granted, 50_000);
  assert.equal(l.queued, 0);
  assert.equal(l.inFlight, 0);
});

test('a closed stream in the queue is skipped', (t) => {
  const l = limiter(t, { concurrency: 1 });
  const granted: string[] = [];
  const a = holder('a', granted);
  const b = holder('b', granted);
  const c = holder('c', granted);
  l.acquire(a);
  l.acquire(b);
  l.acquire(c);
  b.closed = true;
  l.release(a);
  assert.deepEqual(granted, ['a', 'c']);
});

test('a write that never drains gives its slot back after the stuck timeout', (t) => {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout'] });
  let clock = 0;
  const l = limiter(t, { concurrency: 1, stuckMs: 1000 }, () => clock);
  const granted: string[] = [];
  l.acquire(holder('stuck', granted));
  l.acquire(holder('next', granted));
  assert.deepEqual(granted, ['stuck']);
  clock = 900;
  t.mock.timers.tick(900);
  assert.deepEqual(granted, ['stuck'], 'not yet');
  clock = 1200;
  t.mock.timers.tick(300);
  assert.deepEqual(granted, ['stuck', 'next']);
  assert.equal(l.stuckReleases, 1);
});

test('new streams get their first response at the configured rate', (t) => {
  const clock = 0;
  const l = limiter(t, { concurrency: 100, newStreamsPerSecond: 3 }, () => clock);
  const granted: string[] = [];
  for (let i = 0; i < 5; i++) l.acquire(holder(`new${i}`, granted, false));
  assert.deepEqual(granted, ['new0', 'new1', 'new2'], 'the burst is one second of tokens');
  l.acquire(holder('old', granted, true));
  assert.deepEqual(granted, ['new0', 'new1', 'new2', 'old'], 'admitted streams are not rate limited');
  assert.equal(l.queued, 2);
});

test('a stream whose write never drains holds at most MAX_HELD_ROUNDS pushes; the oldest are released', (t) => {
  const l = limiter(t, { concurrency: 10 });
  const writes: Buffer[] = [];
  const pump = new StreamPump(l, {
    build: () => Buffer.from('response'),
    write: (bytes) => writes.push(bytes), // never calls drained: a stuck client
    idle: () => undefined,
  });
  const done: number[] = [];
  const pushes = MAX_HELD_ROUNDS + 10;
  for (let i = 0; i < pushes; i++) {
    pump.mark(CLUSTER, { full: true });
    pump.join({ done: () => done.push(i) });
    pump.kick();
  }
  assert.equal(writes.length, 1); // one response in flight, the rest merged into pending work
  assert.deepEqual(
    done,
    Array.from({ length: pushes - MAX_HELD_ROUNDS }, (_, i) => i),
  );
  pump.close();
  assert.equal(done.length, pushes); // closing releases the rest
});

test('the limiter keeps no reference to a stream once it has had its slot and released it', async (t) => {
  // A connect storm queues thousands of new streams; each closed stream must be collectable, not
  // kept (with all it holds) by the queue's consumed prefix until the next compaction.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const l = limiter(t, { concurrency: 100 });
  const refs: WeakRef<SlotHolder>[] = [];
  const fill = (): void => {
    const granted: string[] = [];
    const holders = Array.from({ length: 50 }, (_, i) => holder(`h${i}`, granted, i % 2 === 0));
    for (const h of holders) {
      refs.push(new WeakRef(h));
      l.acquire(h);
    }
    for (const h of holders) {
      l.release(h);
      h.closed = true;
    }
    assert.equal(granted.length, 50);
  };
  fill();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  assert.deepEqual(
    refs.filter((r) => r.deref() !== undefined).length,
    0,
    'holders still reachable after their slots were released',
  );
});
