// GET /debug/waitz's view (admin/waitz.ts), from streams as the server shows them: which streams a
// generation lists (changed by a push of >= N with something queued or sent, or first sent a
// response of >= N) and each one's state; `pushed` from what the push loop says; the query's bounds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseGeneration, waitz } from '../../../admin/waitz.js';
import { CLUSTER, ENDPOINT, ROUTE } from '../../../xds/proto/type-urls.js';
import type { StreamView, StreamWaitStatus, TypeStatus } from '../../../xds/server/observer.js';

const AT = '2026-01-01T00:00:00.000Z';

function stream(id: string, wait: StreamWaitStatus, types: readonly TypeStatus[]): StreamView {
  return {
    id: `conn-${id}`,
    peer: '127.0.0.1:1',
    api: 'sotw',
    connectedAt: AT,
    proxy: { id } as StreamView['proxy'],
    subscription: () => undefined,
    typeStatus: () => types,
    heldResources: () => [],
    waitStatus: () => wait,
  };
}

/** A type whose last response (nonce `sent`, generation `generation`) was ACKed up to nonce `acked`. */
function type(typeUrl: string, generation: number, sent: string, acked?: string): TypeStatus {
  return {
    typeUrl,
    sentVersion: sent,
    sentNonce: sent,
    sentGeneration: generation,
    ...(acked !== undefined && { acked: { version: acked, nonce: acked, at: AT } }),
  };
}

const PUSHED = { generation: 7, waiting: undefined };

test('listed: changed by a push of >= N with a response of >= N sent or work queued, or first sent at >= N', () => {
  const view = waitz(
    [
      stream('synced', { changedGeneration: 7, firstSentGeneration: 1, queued: [] }, [
        type(CLUSTER, 7, '4', '4'),
      ]),
      stream('queued', { changedGeneration: 7, firstSentGeneration: 1, queued: [ENDPOINT] }, [
        type(ENDPOINT, 3, '2', '2'),
      ]),
      // Handed work at 7 that turned out to change nothing it holds: nothing sent, nothing queued.
      stream('unchanged', { changedGeneration: 7, firstSentGeneration: 1, queued: [] }, [
        type(CLUSTER, 3, '2', '2'),
      ]),
      stream('untouched', { changedGeneration: 3, firstSentGeneration: 1, queued: [] }, [
        type(CLUSTER, 3, '2', '2'),
      ]),
      stream('late', { changedGeneration: -1, firstSentGeneration: 7, queued: [] }, [type(ROUTE, 7, '1')]),
    ],
    7,
    7,
    PUSHED,
  );
  assert.deepEqual(
    view.proxies.map((p) => [p.id, p.state, p.pending]),
    [
      ['late', 'PENDING', ['RDS']],
      ['queued', 'PENDING', ['EDS']],
      ['synced', 'SYNCED', []],
    ],
  );
});

test('NACK: a NACK in force of a response of >= N, whenever it came; one of an older response does not count', () => {
  const wait = { changedGeneration: 7, firstSentGeneration: 1, queued: [] };
  const rejected = (nonce: string, generation: number): TypeStatus => ({
    ...type(CLUSTER, 7, '5', '2'),
    nack: { version: `v${nonce}`, nonce, code: 3, message: 'no', at: AT },
    nackGeneration: generation,
  });
  // `new` NACKed the response of 7 (nonce 5); `old` NACKed one of 6 (nonce 3) and has not answered 7's.
  const view = waitz(
    [stream('new', wait, [rejected('5', 7)]), stream('old', wait, [rejected('3', 6)])],
    7,
    7,
    PUSHED,
  );
  assert.deepEqual(
    view.proxies.map((p) => [p.id, p.state, p.pending, p.nack]),
    [
      ['new', 'NACK', [], { type: 'CDS', message: 'no', version: 'v5' }],
      ['old', 'PENDING', ['CDS'], null],
    ],
  );
});

test('pushed: the serving view holds >= N, or nothing waits and N is in force; not for a later N', () => {
  const none: StreamView[] = [];
  assert.equal(waitz(none, 7, 7, { generation: 7, waiting: undefined }).pushed, true);
  assert.equal(waitz(none, 6, 8, { generation: 8, waiting: undefined }).pushed, true, 'coalesced');
  // Generation 8 published nothing to push (an edit that changed no resource).
  assert.equal(waitz(none, 8, 8, { generation: 7, waiting: undefined }).pushed, true);
  assert.equal(waitz(none, 8, 8, { generation: 7, waiting: 8 }).pushed, false, 'still in the debouncer');
  assert.equal(waitz(none, 9, 8, { generation: 8, waiting: undefined }).pushed, false, 'not published yet');
});

test('the generation query is a non-negative integer', () => {
  assert.equal(parseGeneration('12'), 12);
  for (const bad of [null, '', '-1', '1.5', 'x', '1e3', '99999999999999999'])
    assert.throws(() => parseGeneration(bad), Error, String(bad));
});
