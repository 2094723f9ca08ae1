// The sync state of one type of one stream (/debug/syncz, proxy-status): one rule per state.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { typeSync } from '../../../admin/syncz.js';
import type { TypeStatus } from '../../../xds/server/ads-stream.js';

const NOW = Date.parse('2026-01-01T00:01:00Z');
const sent = { typeUrl: 't', sentVersion: 'v2', sentNonce: '2', sentAt: '2026-01-01T00:00:00.000Z' };
const nack = { version: 'v2', nonce: '2', code: 3, message: 'bad cluster', at: '2026-01-01T00:00:01.000Z' };

const cases: readonly [string, TypeStatus, string, number | null][] = [
  ['nothing sent yet', { typeUrl: 't', sentVersion: '', sentNonce: '' }, 'NOT SENT', null],
  [
    'the last response ACKed',
    { ...sent, acked: { version: 'v2', nonce: '2', at: sent.sentAt } },
    'SYNCED',
    null,
  ],
  ['sent, unanswered', sent, 'STALE', 60_000],
  [
    'an older response ACKed, the last unanswered',
    { ...sent, acked: { version: 'v1', nonce: '1', at: sent.sentAt } },
    'STALE',
    60_000,
  ],
  // A re-send of the same version on a new nonce is not ACKed until its nonce is.
  [
    'the same version re-sent, not yet ACKed',
    { ...sent, acked: { version: 'v2', nonce: '1', at: sent.sentAt } },
    'STALE',
    60_000,
  ],
  ['the last response rejected', { ...sent, nack }, 'NACK', null],
  ['rejected, then a newer one sent', { ...sent, sentNonce: '3', sentVersion: 'v3', nack }, 'STALE', 60_000],
];

for (const [name, status, state, since] of cases) {
  test(`${name}: ${state}`, () => {
    const t = typeSync(status, NOW);
    assert.equal(t.state, state);
    assert.equal(t.sinceSentMs, since);
  });
}
