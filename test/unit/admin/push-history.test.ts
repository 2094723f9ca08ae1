// PushHistory (/debug/push_status): each push with its trigger, proxies, responses and convergence;
// responses counted to the newest push still converging; NACKs; bounded rings; chart buckets; the
// config generation of each push and NACK.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PushHistory } from '../../../admin/push-history.js';
import type { PushInfo, StreamView } from '../../../xds/server/observer.js';

const stream = { id: 'conn-1', proxy: { id: 'node-1' } } as unknown as StreamView;

function push(round: number, files: string[] = []): PushInfo {
  return {
    round,
    kind: 'config',
    changesMerged: 1,
    debounceMs: 100,
    trigger: { registries: ['config'], files, hostnames: [], hostnameCount: 0 },
    generation: 40 + round,
  };
}

const response = (type: string) => ({ typeUrl: `t/${type}`, type, resources: 1, bytes: 10, buildMs: 0.1 });

test('a push is recorded with its trigger, the proxies it touched, its responses per type and its convergence', () => {
  let now = Date.parse('2026-01-01T00:00:00Z');
  const history = new PushHistory({ now: () => now });
  history.pushStarted(push(1, ['traffic/split.yaml']));
  history.pushHandedOut(push(1), 2.345, 3);
  history.responseSent(stream, response('RDS'));
  history.responseSent(stream, response('RDS'));
  history.responseSent(stream, response('CDS'));
  now += 150;
  history.pushConverged(push(1), 150.123);
  history.responseSent(stream, response('LDS')); // after convergence: a request's answer, not the push's
  const [record] = history.pushes();
  assert.deepEqual(record, {
    round: 1,
    kind: 'config',
    startedAt: '2026-01-01T00:00:00.000Z',
    trigger: { registries: ['config'], files: ['traffic/split.yaml'], hostnames: [], hostnameCount: 0 },
    changesMerged: 1,
    debounceMs: 100,
    pushMs: 2.35,
    proxies: 3,
    responses: { RDS: 2, CDS: 1 },
    convergenceMs: 150.12,
    generation: 41,
  });
});

test('responses go to the newest push still converging', () => {
  const history = new PushHistory();
  history.pushStarted(push(1));
  history.pushStarted(push(2));
  history.responseSent(stream, response('EDS'));
  const [second, first] = history.pushes();
  assert.deepEqual(second?.responses, { EDS: 1 });
  assert.deepEqual(first?.responses, {});
});

test('the push and NACK rings keep only the newest entries', () => {
  const history = new PushHistory({ pushes: 3, nacks: 2 });
  for (let i = 1; i <= 5; i++) {
    history.pushStarted(push(i));
    history.nack(stream, {
      typeUrl: 't',
      type: 'CDS',
      nonce: String(i),
      code: 3,
      message: `bad ${i}`,
      generation: 40 + i,
    });
  }
  assert.deepEqual(
    history.pushes().map((p) => p.round),
    [5, 4, 3],
  );
  assert.deepEqual(
    history.nacks().map((n) => [n.node, n.nonce, n.message, n.generation]),
    [
      ['node-1', '5', 'bad 5', 45],
      ['node-1', '4', 'bad 4', 44],
    ],
  );
});

test('the chart series covers the whole window, with pushes and the slowest convergence per bucket', () => {
  let now = Date.parse('2026-01-01T00:00:05Z');
  const history = new PushHistory({ bucketMs: 10_000, buckets: 6, now: () => now });
  history.pushStarted(push(1));
  history.pushConverged(push(1), 120);
  now += 20_000; // two buckets later
  history.pushStarted(push(2));
  history.pushStarted(push(3));
  history.pushConverged(push(2), 40);
  history.pushConverged(push(3), 300);
  const { bucketSeconds, buckets } = history.series();
  assert.equal(bucketSeconds, 10);
  assert.deepEqual(
    buckets.map((b) => [b.at.slice(11, 19), b.pushes, b.converged, b.convergenceMaxMs]),
    [
      ['23:59:30', 0, 0, 0],
      ['23:59:40', 0, 0, 0],
      ['23:59:50', 0, 0, 0],
      ['00:00:00', 1, 1, 120],
      ['00:00:10', 0, 0, 0],
      ['00:00:20', 2, 2, 300],
    ],
  );
});
