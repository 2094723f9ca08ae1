// The batched connection log: connects and disconnects queued per stream and written once a quiet
// interval has passed (or the first has waited long enough), in one transaction, each disconnect on
// its own connect's row.
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import type { StreamView, TypeStatus } from '../../../xds/server/observer.js';
import {
  BatchedConnectionLog,
  ConnectionLogObserver,
  MAX_DELAY_INTERVALS,
  MAX_QUEUED,
  type ConnectionLog,
} from '../../../xds/server/connection-log.js';
import { CLUSTER, ENDPOINT } from '../../../xds/proto/type-urls.js';
import { ManualClock } from '../../support/manual-clock.js';

interface Row {
  readonly nodeId: string;
  readonly at: string;
  ended?: { acks: Record<string, unknown>; nacks: Record<string, unknown>; at: string };
}

/** A log in memory: row ids are positions; `batches` counts transactions; `decline` refuses nodes. */
class MemoryLog implements ConnectionLog {
  readonly rows: Row[] = [];
  readonly calls: string[] = [];
  batches = 0;
  inBatch = false;
  constructor(private readonly decline: ReadonlySet<string> = new Set()) {}
  connected(nodeId: string, _peer: string, _kind: string, at: string): number | undefined {
    this.calls.push(`connect ${nodeId}${this.inBatch ? '' : ' (outside a batch)'}`);
    if (this.decline.has(nodeId)) return undefined;
    return this.rows.push({ nodeId, at }) - 1;
  }
  disconnected(id: number, acks: Record<string, unknown>, nacks: Record<string, unknown>, at: string): void {
    const row = this.rows[id] ?? assert.fail(`disconnect of unknown row ${id}`);
    this.calls.push(`disconnect ${row.nodeId}${this.inBatch ? '' : ' (outside a batch)'}`);
    row.ended = { acks, nacks, at };
  }
  batch(fn: () => void): void {
    this.batches += 1;
    this.inBatch = true;
    try {
      fn();
    } finally {
      this.inBatch = false;
    }
  }
}

test('a connect and its disconnect queued in the same interval land on the same row, in one transaction', () => {
  const log = new MemoryLog();
  const batched = new BatchedConnectionLog(log, 60_000);
  const a = batched.connected('a', 'peer-a', 'grpc', 't1');
  const b = batched.connected('b', 'peer-b', 'envoy', 't2');
  batched.disconnected(a, { CDS: { version: '1' } }, {}, 't3');
  assert.deepEqual(log.calls, [], 'nothing is written before the flush');
  batched.flush();
  assert.equal(log.batches, 1);
  assert.deepEqual(log.calls, ['connect a', 'connect b', 'disconnect a']);
  assert.deepEqual(log.rows, [
    { nodeId: 'a', at: 't1', ended: { acks: { CDS: { version: '1' } }, nacks: {}, at: 't3' } },
    { nodeId: 'b', at: 't2' },
  ]);
  // b's disconnect comes in a later interval and still finds b's row.
  batched.disconnected(b, {}, { EDS: { nonce: '4' } }, 't4');
  batched.flush();
  assert.equal(log.batches, 2);
  assert.deepEqual(log.rows[1], {
    nodeId: 'b',
    at: 't2',
    ended: { acks: {}, nacks: { EDS: { nonce: '4' } }, at: 't4' },
  });
  batched.flush();
  assert.equal(log.batches, 2, 'an empty queue writes nothing');
});

test('a connect the log declined has no disconnect written', () => {
  const log = new MemoryLog(new Set(['declined']));
  const batched = new BatchedConnectionLog(log, 60_000);
  const d = batched.connected('declined', 'p', 'grpc', 't1');
  const ok = batched.connected('ok', 'p', 'grpc', 't1');
  batched.flush();
  batched.disconnected(d, {}, {}, 't2');
  batched.disconnected(ok, {}, {}, 't2');
  batched.flush();
  assert.deepEqual(log.calls, ['connect declined', 'connect ok', 'disconnect ok']);
});

test('the queue is written by its timer', () => {
  const clock = new ManualClock();
  const log = new MemoryLog();
  const batched = new BatchedConnectionLog(log, 5, clock);
  batched.connected('timed', 'p', 'grpc', 't1');
  // The interval the connect came in, then one without an event.
  clock.advance(9);
  assert.deepEqual(log.calls, [], 'not before a whole quiet interval');
  clock.advance(1);
  assert.deepEqual(log.calls, ['connect timed']);
  assert.equal(clock.pending, 0, 'no timer left once the queue is empty');
});

test('while streams keep coming the queue waits, and it is written one quiet interval after the last', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const log = new MemoryLog();
    const batched = new BatchedConnectionLog(log, 10);
    // A storm: a connect every 4 ms for 40 ms, then nothing.
    for (let i = 0; i < 10; i++) {
      batched.connected(`s${i}`, 'p', 'grpc', 't');
      mock.timers.tick(4);
    }
    assert.deepEqual(log.calls, [], 'nothing is written while connects keep arriving');
    mock.timers.tick(10); // the interval in which the last connect came
    assert.deepEqual(log.calls, []);
    mock.timers.tick(10); // a whole interval without one
    assert.equal(log.calls.length, 10);
    assert.equal(log.batches, 1);
  } finally {
    mock.timers.reset();
  }
});

test('endless churn is still written, at the latest MAX_DELAY_INTERVALS intervals after its first event', () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const log = new MemoryLog();
    const batched = new BatchedConnectionLog(log, 10);
    let i = 0;
    for (; i < (MAX_DELAY_INTERVALS * 10) / 2 - 1; i++) {
      batched.connected(`s${i}`, 'p', 'grpc', 't');
      mock.timers.tick(2);
    }
    assert.deepEqual(log.calls, [], 'not yet: the first connect has waited less than the maximum');
    batched.connected(`s${i}`, 'p', 'grpc', 't');
    mock.timers.tick(2);
    assert.equal(log.calls.length, i + 1, 'every queued connect is written at the maximum delay');
  } finally {
    mock.timers.reset();
  }
});

test('a queue of MAX_QUEUED events is written at once, without waiting for its timer', () => {
  const log = new MemoryLog();
  const batched = new BatchedConnectionLog(log, 60_000);
  for (let i = 0; i < MAX_QUEUED - 1; i++) batched.connected(`s${i}`, 'p', 'grpc', 't');
  assert.equal(log.calls.length, 0);
  batched.connected('last', 'p', 'grpc', 't');
  assert.equal(log.calls.length, MAX_QUEUED);
  batched.flush(); // clears the timer
});

/** A stream as the observer sees it. */
function fakeStream(nodeId: string, statuses: readonly TypeStatus[]): StreamView {
  return {
    id: `conn-${nodeId}`,
    peer: 'ipv4:127.0.0.1:1',
    api: 'sotw',
    connectedAt: 't0',
    proxy: { id: nodeId, kind: 'grpc' } as StreamView['proxy'],
    subscription: () => undefined,
    typeStatus: () => statuses,
    heldResources: () => [],
  };
}

test('the observer records an identified stream once, and its close once, with the last ACK and NACK per type', () => {
  const log = new MemoryLog();
  const observer = new ConnectionLogObserver(log, 60_000);
  const acked = { version: 'v1', nonce: '1', at: 't1' };
  const nack = { version: 'v2', nonce: '2', code: 3, message: 'no', at: 't2' };
  const stream = fakeStream('node-1', [
    { typeUrl: CLUSTER, sentVersion: 'v1', sentNonce: '1', acked },
    { typeUrl: ENDPOINT, sentVersion: 'v2', sentNonce: '2', nack },
  ]);
  const unidentified = fakeStream('never', []);
  observer.streamIdentified(stream);
  observer.streamClosed(stream);
  observer.streamClosed(stream); // a second close of the same stream writes nothing more
  observer.streamClosed(unidentified); // never identified: no row to close
  observer.serverStopped();
  assert.deepEqual(log.calls, ['connect node-1', 'disconnect node-1']);
  assert.equal(log.rows[0]?.at, 't0', "the stream's own start");
  assert.deepEqual(log.rows[0]?.ended?.acks, { CDS: acked });
  assert.deepEqual(log.rows[0]?.ended?.nacks, { EDS: nack });
});
