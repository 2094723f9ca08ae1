// The make-before-break rule of one stream (xds/server/make-before-break.ts): which answers release
// LDS and RDS held after a CDS response added clusters, the deadline for a client that never
// answers, and when removed resources are kept. Wire order: test/integration/push-order.test.ts.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { MakeBeforeBreak, WARMING_DEADLINE_MS } from '../../../xds/server/make-before-break.js';

function rule(t?: TestContext): { order: MakeBeforeBreak; pending: Set<string>; releases: () => number } {
  const pending = new Set<string>();
  let released = 0;
  const order = new MakeBeforeBreak(pending, () => (released += 1));
  t?.after(() => order.close());
  return { order, pending, releases: () => released };
}

test('LDS and RDS are held after a CDS response that adds clusters, until the client answers it', () => {
  const { order } = rule();
  assert.equal(order.holds(LISTENER), false);
  order.clustersSent('3', 2);
  assert.deepEqual(
    [LISTENER, ROUTE, CLUSTER, ENDPOINT].map((t) => order.holds(t)),
    [true, true, false, false],
  );
  assert.equal(order.answered(ENDPOINT, '4'), false, 'an EDS ACK is no answer to CDS');
  assert.equal(order.answered(CLUSTER, '2'), false, 'an earlier CDS response answered');
  assert.equal(order.answered(CLUSTER, 'x'), false, 'a nonce this stream never sent');
  assert.equal(order.holds(ROUTE), true);
  assert.equal(order.answered(CLUSTER, '3'), true);
  assert.equal(order.holds(ROUTE), false);
  assert.equal(order.answered(CLUSTER, '3'), false, 'released once');
});

test('a CDS response that adds nothing holds nothing; a later one answered releases an earlier hold', () => {
  const { order } = rule();
  order.clustersSent('1', 0);
  assert.equal(order.holds(LISTENER), false);
  order.clustersSent('2', 1);
  order.clustersSent('5', 1);
  assert.equal(order.answered(CLUSTER, '2'), false, 'the newest clusters still warm');
  assert.equal(order.answered(CLUSTER, '7'), true);
  assert.equal(order.holds(LISTENER), false);
});

test('a client that never answers holds its LDS and RDS back for the deadline, counted from the last CDS', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { order, releases } = rule(t);
  order.clustersSent('1', 1);
  t.mock.timers.tick(WARMING_DEADLINE_MS - 1);
  order.clustersSent('2', 1);
  t.mock.timers.tick(WARMING_DEADLINE_MS - 1);
  assert.equal(order.holds(LISTENER), true, 'each CDS adding clusters gets the whole deadline');
  assert.equal(releases(), 0);
  t.mock.timers.tick(1);
  assert.equal(order.holds(LISTENER), false);
  assert.equal(releases(), 1, 'the stream is told, to send what was held');
});

test('an answer in time cancels the deadline', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { order, releases } = rule(t);
  order.clustersSent('1', 1);
  assert.equal(order.answered(CLUSTER, '1'), true);
  t.mock.timers.tick(WARMING_DEADLINE_MS);
  assert.equal(releases(), 0, 'released by the answer, not again by the timer');
});

test('removed clusters and load assignments are kept while LDS or RDS work is pending, then evaluated again', () => {
  const { order, pending } = rule();
  assert.equal(order.keepsRemovals(CLUSTER), false);
  pending.add(ROUTE);
  assert.deepEqual(
    [CLUSTER, ENDPOINT, LISTENER, ROUTE].map((t) => order.keepsRemovals(t)),
    [true, true, false, false],
  );
  assert.equal(order.settled(), false, 'nothing kept yet');
  order.keptRemoved();
  pending.clear();
  assert.equal(order.settled(), true, 'kept: CDS and EDS again once settled');
  assert.equal(order.settled(), false, 'once');
});
