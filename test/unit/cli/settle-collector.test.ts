// The settle collector (cli/settle-collector.ts): once the heap has grown a lot and the event loop
// has gone idle, it runs one collection — and only one for that growth.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startSettleCollector } from '../../../cli/settle-collector.js';
import { eventually } from '../../support/eventually.js';

test('after the heap grows by tens of MB and the process goes idle, one collection runs', async () => {
  let calls = 0;
  const collector = startSettleCollector(() => (calls += 1));
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
