// The push debouncer on mocked timers: quiet period, batch bound under steady churn, maximum delay,
// and changes their source already debounced.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { changedHosts, changeOf, endpointsOnly, type ChangeEvent } from '../../../model/change.js';
import {
  PushDebouncer,
  type DebounceOptions,
  type MergedChange,
} from '../../../xds/server/push-debouncer.js';

function change(host: string, onlyEndpoints = true): ChangeEvent {
  return changeOf(onlyEndpoints ? { endpoints: [host] } : { services: [host], endpoints: [host] });
}

/** A change the config directory publishes: read after its own quiet period. */
function edited(host: string): ChangeEvent {
  return { ...change(host), trigger: { registries: [], files: [`${host}.yaml`], debounced: true } };
}

/** A debouncer on mocked setTimeout with a clock that moves with the mocked timers. */
function harness(t: TestContext, options: DebounceOptions, ready: () => boolean = () => true) {
  t.mock.timers.enable({ apis: ['setTimeout', 'setImmediate'] });
  let clock = 0;
  const flushed: (MergedChange & { at: number })[] = [];
  const d = new PushDebouncer(
    options,
    (c) => flushed.push({ ...c, at: clock }),
    () => clock,
    ready,
  );
  t.after(() => d.stop());
  return {
    d,
    flushed,
    /** Runs what is due now (setImmediate callbacks), the clock standing still. */
    settle() {
      t.mock.timers.tick(0);
    },
    advance(ms: number) {
      for (let i = 0; i < ms; i++) {
        clock += 1;
        t.mock.timers.tick(1);
      }
    },
  };
}

test('a single change is pushed once the quiet period passes, not before', (t) => {
  const h = harness(t, { quietMs: 100, maxDelayMs: 10_000 });
  h.d.add(change('a'));
  h.advance(99);
  assert.equal(h.flushed.length, 0);
  h.advance(1);
  assert.equal(h.flushed.length, 1);
  assert.equal(h.flushed[0]?.at, 100);
});

test('changes within the quiet period are merged into one push', (t) => {
  const h = harness(t, { quietMs: 100, maxDelayMs: 10_000 });
  h.d.add(change('a'));
  h.advance(30);
  h.d.add(change('b', false));
  h.advance(30);
  h.d.add(change('a'));
  h.advance(100);
  assert.equal(h.flushed.length, 1);
  const pushed = h.flushed[0];
  assert.deepEqual([...(pushed ? changedHosts(pushed.event) : [])].sort(), ['a', 'b']);
  assert.equal(pushed && endpointsOnly(pushed.event), false, 'a service change makes the merged push full');
  assert.equal(pushed?.merged, 3);
  assert.equal(pushed?.at, 160, 'the quiet period runs from the last change');
});

test('steady churn faster than the quiet period is pushed about every two quiet periods, not starved', (t) => {
  const h = harness(t, { quietMs: 100, maxDelayMs: 10_000 });
  for (let ms = 0; ms < 2000; ms += 50) {
    h.d.add(change(`h${ms}`));
    h.advance(50);
  }
  // A quiet-period-only debouncer would push once, at the 10 s maximum delay.
  assert.ok(h.flushed.length >= 9, `pushes during 2 s of churn: ${h.flushed.length}`);
  for (const f of h.flushed) assert.ok(f.at - f.firstSeen <= 200, `batch open ${f.at - f.firstSeen} ms`);
  h.advance(300);
  assert.equal(
    h.flushed.reduce((n, f) => n + f.merged, 0),
    40,
    'every change is pushed exactly once',
  );
});

test('the maximum delay caps the batch when it is shorter than the batch bound', (t) => {
  const h = harness(t, { quietMs: 1000, maxDelayMs: 300 });
  for (let ms = 0; ms < 600; ms += 50) {
    h.d.add(change(`h${ms}`));
    h.advance(50);
  }
  assert.equal(h.flushed[0]?.at, 300);
});

test('a quiet period of 0 pushes every change at once', (t) => {
  const h = harness(t, { quietMs: 0, maxDelayMs: 10_000 });
  h.d.add(change('a'));
  h.d.add(change('b'));
  assert.equal(h.flushed.length, 2);
});

test('a due batch waits while the previous push is still being handed out, and goes on resume', (t) => {
  let ready = false;
  const h = harness(t, { quietMs: 100, maxDelayMs: 10_000 }, () => ready);
  h.d.add(change('a'));
  h.advance(150);
  h.d.add(change('b'));
  h.advance(300);
  assert.equal(h.flushed.length, 0, 'held');
  ready = true;
  h.d.resume();
  assert.equal(h.flushed.length, 1);
  assert.deepEqual([...(h.flushed[0] ? changedHosts(h.flushed[0].event) : [])].sort(), ['a', 'b']);
});

test('a held batch still goes at the maximum delay', (t) => {
  const h = harness(t, { quietMs: 100, maxDelayMs: 1000 }, () => false);
  h.d.add(change('a'));
  h.advance(999);
  assert.equal(h.flushed.length, 0);
  h.advance(1);
  assert.equal(h.flushed.length, 1);
});

test('changes their source already debounced go once the current callbacks are done, together', (t) => {
  const h = harness(t, { quietMs: 100, maxDelayMs: 10_000 });
  h.d.add(edited('a'));
  h.d.add(edited('b'));
  assert.equal(h.flushed.length, 0, 'not inside the call that published them');
  h.settle();
  assert.equal(h.flushed.length, 1);
  assert.equal(h.flushed[0]?.at, 0, 'no second quiet period');
  assert.deepEqual([...(h.flushed[0] ? changedHosts(h.flushed[0].event) : [])].sort(), ['a', 'b']);
  assert.equal(h.flushed[0]?.merged, 2);
});

test('a batch with a change not debounced at its source waits for the quiet period, whatever joins it', (t) => {
  const h = harness(t, { quietMs: 100, maxDelayMs: 10_000 });
  h.d.add(edited('a'));
  h.d.add(change('b'));
  h.settle();
  assert.equal(h.flushed.length, 0, 'the registry change holds the batch');
  h.advance(50);
  h.d.add(edited('c'));
  h.advance(99);
  assert.equal(h.flushed.length, 0, 'the quiet period runs from the last change');
  h.advance(1);
  assert.equal(h.flushed.length, 1);
  assert.equal(h.flushed[0]?.at, 150);
  assert.deepEqual([...(h.flushed[0] ? changedHosts(h.flushed[0].event) : [])].sort(), ['a', 'b', 'c']);
});

test('a debounced change right after a push waits for the quiet period; once pushes are idle it goes at once', (t) => {
  const h = harness(t, { quietMs: 100, maxDelayMs: 10_000 });
  h.d.add(edited('a'));
  h.settle();
  assert.equal(h.flushed.length, 1);
  h.advance(60);
  h.d.add(edited('b'));
  h.settle();
  h.advance(99);
  assert.equal(h.flushed.length, 1, 'under churn, batches share pushes');
  h.advance(1);
  assert.equal(h.flushed.length, 2);
  assert.equal(h.flushed[1]?.at, 160);
  h.advance(100);
  h.d.add(edited('c'));
  h.settle();
  assert.equal(h.flushed.length, 3, 'a quiet period after the last push: at once');
  assert.equal(h.flushed[2]?.at, 260);
});

test('a debounced batch still waits while the previous push is being handed out', (t) => {
  let ready = false;
  const h = harness(t, { quietMs: 100, maxDelayMs: 1000 }, () => ready);
  h.d.add(edited('a'));
  h.settle();
  h.advance(200);
  h.d.add(edited('b'));
  h.settle();
  assert.equal(h.flushed.length, 0, 'held');
  ready = true;
  h.d.resume();
  assert.equal(h.flushed.length, 1);
  assert.deepEqual([...(h.flushed[0] ? changedHosts(h.flushed[0].event) : [])].sort(), ['a', 'b']);
});
