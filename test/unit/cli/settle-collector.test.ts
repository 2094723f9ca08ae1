// The settle collector (cli/settle-collector.ts): once the heap has grown a lot and the event loop
// has gone idle, it runs one collection — and only one for that growth — but only while a stream is
// connected, or after LONELY_TICKS of idle time with none (a collection with no stream alive costs
// the next storm its optimised code).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  GROWTH_MIB,
  IDLE_TICKS,
  LONELY_TICKS,
  SettlePolicy,
  startSettleCollector,
  type SettleSample,
} from '../../../cli/settle-collector.js';
import { eventually } from '../../support/eventually.js';

const MIB = 2 ** 20;
const LIVE = 100 * MIB;
const GROWN = LIVE + (GROWTH_MIB + 10) * MIB;

/** Drives a policy with `ticks` identical samples; the ticks on which it said collect (1-based). */
function drive(policy: SettlePolicy, ticks: number, sample: SettleSample): number[] {
  const collected: number[] = [];
  for (let i = 1; i <= ticks; i++) {
    if (!policy.tick(sample)) continue;
    collected.push(i);
    policy.collected(LIVE);
  }
  return collected;
}

const idle = (streams: number, heapUsed = GROWN): SettleSample => ({
  busy: 0,
  heapUsed,
  streams: () => streams,
});

test('with streams connected, a grown heap is collected once, after IDLE_TICKS idle ticks', () => {
  const policy = new SettlePolicy(LIVE);
  // After the collection the heap stays at LIVE: no growth, so no second collection.
  const collected: number[] = [];
  for (let i = 1; i <= 50; i++) {
    if (policy.tick(idle(2000, collected.length > 0 ? LIVE : GROWN))) {
      collected.push(i);
      policy.collected(LIVE);
    }
  }
  assert.deepEqual(collected, [IDLE_TICKS]);
});

test('a busy tick (a storm, steady churn) puts the collection off', () => {
  const policy = new SettlePolicy(LIVE);
  assert.deepEqual(drive(policy, IDLE_TICKS - 1, idle(2000)), []);
  assert.equal(policy.tick({ busy: 0.5, heapUsed: GROWN, streams: () => 2000 }), false);
  assert.deepEqual(drive(policy, IDLE_TICKS, idle(2000)), [IDLE_TICKS]);
});

test('growth under the threshold is not collected', () => {
  const policy = new SettlePolicy(LIVE);
  assert.deepEqual(drive(policy, 100, idle(2000, LIVE + (GROWTH_MIB - 1) * MIB)), []);
});

test('with no stream connected it waits LONELY_TICKS of idle time, then collects', () => {
  const policy = new SettlePolicy(LIVE);
  assert.deepEqual(drive(policy, IDLE_TICKS + LONELY_TICKS - 2, idle(0)), []);
  // Busy spells (an edit now and then) reset the idle run but not the time waited without streams.
  assert.equal(policy.tick({ busy: 0.2, heapUsed: GROWN, streams: () => 0 }), false);
  assert.deepEqual(drive(policy, IDLE_TICKS, idle(0)), [IDLE_TICKS]);
});

test('a stream connecting while it waits lets the collection run at once', () => {
  const policy = new SettlePolicy(LIVE);
  assert.deepEqual(drive(policy, IDLE_TICKS + 10, idle(0)), []);
  assert.deepEqual(drive(policy, 1, idle(1)), [1]);
});

test('streams are counted only on a tick that would otherwise collect', () => {
  const policy = new SettlePolicy(LIVE);
  let counted = 0;
  const counting = (busy: number, heapUsed: number): SettleSample => ({
    busy,
    heapUsed,
    streams: () => ((counted += 1), 0),
  });
  for (let i = 0; i < 20; i++) policy.tick(counting(0.5, GROWN));
  for (let i = 0; i < 20; i++) policy.tick(counting(0, LIVE));
  assert.equal(counted, 0);
  policy.tick(counting(0, GROWN));
  assert.equal(counted, 1);
});

test('after the heap grows by tens of MB and the process goes idle, one collection runs', async () => {
  let calls = 0;
  const collector = startSettleCollector({ streams: () => 1, collect: () => (calls += 1) });
  try {
    // 64 MiB of small live objects, as a storm's promoted garbage: the heap grows past the threshold.
    const held: number[][] = [];
    for (let i = 0; i < 1 << 16; i++) held.push(new Array<number>(128).fill(i));
    await eventually(() => calls === 1, { timeoutMs: 10_000, what: 'one collection' });
    assert.equal(collector.collections, 1);
    assert.ok(held.length > 0);
  } finally {
    collector.stop();
  }
});

test('without --expose-gc and no collect given, it does nothing', () => {
  const collector = startSettleCollector({ streams: () => 1, collect: undefined });
  collector.stop();
  assert.equal(collector.collections, 0);
});
