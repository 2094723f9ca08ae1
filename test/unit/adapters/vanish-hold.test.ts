// The rule Consul and ZooKeeper share (adapters/vanish-hold.ts), on an injected clock: when a
// service that had endpoints gets none, it is held only when armed, until endpoints return or the
// hold runs out; a service that leaves the source is never held.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { VanishHold } from '../../../adapters/vanish-hold.js';
import { eventually } from '../../support/eventually.js';

function holdAt(start = 1_000_000) {
  let now = start;
  let expired = 0;
  const hold = new VanishHold({ holdMs: 5000, now: () => now, expired: () => expired++ });
  return {
    hold,
    advance: (ms: number) => (now += ms),
    expirations: () => expired,
  };
}

test('held only when armed and the service had endpoints', () => {
  const { hold } = holdAt();
  assert.equal(hold.decide('a', 3, 0, false), 'apply', 'not armed');
  assert.equal(hold.decide('b', 0, 0, true), 'apply', 'nothing to keep');
  assert.equal(hold.decide('c', 3, 1, true), 'apply', 'not every endpoint vanished');
  assert.equal(hold.decide('d', 3, 0, true), 'hold');
  assert.deepEqual(
    hold.held().map((h) => [h.service, h.endpoints]),
    [['d', 3]],
  );
  assert.match(hold.problem()?.message ?? '', /^d lost every endpoint at once; keeping its last 3 until /);
  hold.stop();
});

test('endpoints that return end the hold at once; so does the service leaving the source', () => {
  const { hold } = holdAt();
  hold.decide('a', 2, 0, true);
  hold.decide('b', 2, 0, true);
  assert.equal(hold.decide('a', 2, 1, true), 'apply');
  hold.release('b');
  assert.equal(hold.size, 0);
  assert.equal(hold.problem(), undefined);
  hold.stop();
});

test('the hold is bounded: once it ran out the empty answer applies, and is not held again', () => {
  const { hold, advance } = holdAt();
  assert.equal(hold.decide('a', 2, 0, true), 'hold');
  advance(4999);
  assert.equal(hold.decide('a', 2, 0, true), 'hold', 'still within the hold');
  advance(1);
  assert.equal(hold.decide('a', 2, 0, true), 'apply', 'ran out');
  assert.equal(hold.decide('a', 0, 0, true), 'apply', 'nothing left to keep');
  hold.stop();
});

test('a zero hold turns the rule off', () => {
  const hold = new VanishHold({ holdMs: 0, expired: () => {} });
  assert.equal(hold.decide('a', 2, 0, true), 'apply');
});

test('the timer calls back when the earliest hold runs out', async () => {
  let calls = 0;
  const hold = new VanishHold({ holdMs: 30, expired: () => calls++ });
  hold.decide('a', 1, 0, true);
  await eventually(() => assert.equal(calls, 1), { what: 'the expiry callback' });
  assert.equal(hold.decide('a', 1, 0, true), 'apply');
  hold.stop();
});

test('the timer calls back once per deadline, even when the clock still reads a moment before it', async (t) => {
  // A frozen clock: when the timer fires, the deadline still lies ahead by the clock (timers and
  // Date.now() can disagree by a millisecond). Before, the hold got a new timer and a second callback.
  let calls = 0;
  const hold = new VanishHold({ holdMs: 20, now: () => 1_000_000, expired: () => calls++ });
  t.after(() => hold.stop());
  hold.decide('a', 1, 0, true);
  await eventually(() => assert.ok(calls >= 1), { what: 'the expiry callback' });
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(calls, 1);
});

test('a hold the timer fired for applies when decided again, even while the clock reads a moment before its deadline', async (t) => {
  // The adapter decides again in the callback; were the hold kept, nothing would end it until the
  // source answered again (a Consul watch whose empty answer does not change).
  let calls = 0;
  const hold = new VanishHold({ holdMs: 20, now: () => 1_000_000, expired: () => calls++ });
  t.after(() => hold.stop());
  hold.decide('a', 1, 0, true);
  hold.decide('b', 1, 0, true);
  assert.equal(hold.decide('a', 1, 0, true), 'hold', 'before the timer');
  await eventually(() => assert.ok(calls >= 1), { what: 'the expiry callback' });
  assert.equal(hold.decide('a', 1, 0, true), 'apply');
  assert.equal(hold.decide('b', 1, 0, true), 'apply');
  assert.equal(hold.size, 0);
});
