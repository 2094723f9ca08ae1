// A join token's state as `token list` and /debug/caz show it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joinTokenState } from '../../../ca/join-tokens.js';

const now = new Date('2026-01-01T00:00:00Z');
const later = '2026-01-02T00:00:00.000Z';

test('a token is live, used up, expired or revoked', () => {
  assert.equal(joinTokenState({ revokedAt: null, expiresAt: later, usesLeft: 1 }, now), 'live');
  assert.equal(joinTokenState({ revokedAt: null, expiresAt: later, usesLeft: 0 }, now), 'used up');
  assert.equal(
    joinTokenState({ revokedAt: null, expiresAt: '2025-12-31T00:00:00Z', usesLeft: 0 }, now),
    'expired',
  );
  assert.equal(
    joinTokenState({ revokedAt: '2025-12-31T00:00:00Z', expiresAt: later, usesLeft: 1 }, now),
    'revoked',
  );
});
