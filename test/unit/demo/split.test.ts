// The demo's split is counted over a rolling window of the last seconds (demo/split.ts, issue #48),
// so chance in one second's 20 calls does not make an 80/20 split read 63 % or 95 %.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatWindow, SplitCounter } from '../../../demo/split.js';

test('each take counts the last five seconds, and the oldest second leaves the window', () => {
  const counter = new SplitCounter(5);
  const at = new Date(2026, 0, 1, 12, 0, 0);
  for (let second = 0; second < 5; second++) {
    for (let i = 0; i < 20; i++) counter.add({ backend: i < 16 ? 'v1@a' : 'v2@b' });
    counter.take(at);
  }
  for (let i = 0; i < 20; i++) counter.add({ backend: 'v2@b' }); // weights now 0/100
  const w = counter.take(at);
  assert.equal(w.seconds, 5);
  assert.equal(w.calls, 100);
  assert.equal(w.byBackend.get('v1@a'), 64);
  assert.equal(w.byBackend.get('v2@b'), 36);
  assert.equal(
    formatWindow(w, ['v1@a', 'v2@b']),
    '12:00:00  100 calls (last 5 s)  v1@a 64% (64) | v2@b 36% (36)',
  );
});
