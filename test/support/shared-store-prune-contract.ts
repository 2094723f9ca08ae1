// The contract of SharedStore.prune (store/shared-store.ts), run against SQLite and PostgreSQL:
// enrollments started before the cutoff go and later ones stay; a revocation goes once it can no
// longer match a valid certificate (a token's a day after, a serial's when its certificate expired)
// and an identity's, or an unknown serial's, never; the counts say what went, and a second run
// finds nothing more.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import type { SharedStore } from '../../store/shared-store.js';

export interface PruneSubject {
  readonly name: string;
  /** A fresh, empty store (released by the subject's own `after`). */
  fresh(): Promise<SharedStore>;
}

const NOW = new Date('2026-05-01T00:00:00Z');
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const ago = (ms: number): Date => new Date(NOW.getTime() - ms);
const IDENTITY = 'spiffe://cluster.local/ns/shop/sa/orders';

async function token(store: SharedStore, id: string): Promise<void> {
  await store.insertJoinToken({
    id,
    hash: createHash('sha256').update(id).digest('hex'),
    identity: IDENTITY,
    expiresAt: new Date(NOW.getTime() + DAY).toISOString(),
    uses: 1,
  });
}

async function enrollment(store: SharedStore, id: string, startedAt: Date, tokenId: string | null = null) {
  await store.startEnrollment({ id, identity: IDENTITY, tokenId, startedAt: startedAt.toISOString() });
}

const subjects = async (store: SharedStore): Promise<string[]> =>
  (await store.listRevocations()).map((r) => `${r.kind}:${r.subject}`).sort();

export function sharedStorePruneContract(subject: PruneSubject): void {
  describe(`SharedStore.prune contract: ${subject.name}`, () => {
    test('an empty store prunes nothing', async () => {
      const store = await subject.fresh();
      assert.deepEqual(await store.prune(NOW, ago(DAY)), { enrollments: 0, revocations: 0 });
    });

    test('enrollments started before the cutoff go; those started at or after it stay', async () => {
      const store = await subject.fresh();
      await enrollment(store, 'e-old', ago(10 * DAY));
      await enrollment(store, 'e-edge', ago(5 * DAY));
      await enrollment(store, 'e-new', ago(HOUR));
      assert.deepEqual(await store.prune(NOW, ago(5 * DAY)), { enrollments: 1, revocations: 0 });
      assert.equal(await store.getEnrollment('e-old'), undefined);
      assert.ok(await store.getEnrollment('e-edge'));
      assert.ok(await store.getEnrollment('e-new'));
    });

    test('revocations go once they cannot match a valid certificate; identities and unknown serials stay', async () => {
      const store = await subject.fresh();
      await token(store, 'tok-old');
      await token(store, 'tok-new');
      await enrollment(store, 'e-old', ago(4 * DAY), 'tok-old');
      await enrollment(store, 'e-new', ago(HOUR), 'tok-new');
      await store.revokeJoinToken('tok-old', ago(3 * DAY)); // kept until a day after: gone
      await store.revokeJoinToken('tok-new', NOW); // kept until tomorrow
      await store.recordIssued({
        serial: 'abc1',
        identity: IDENTITY,
        nodeId: 'vm-1',
        enrollmentId: null,
        notBefore: ago(2 * DAY).toISOString(),
        notAfter: ago(HOUR).toISOString(),
        issuedAt: ago(2 * DAY).toISOString(),
      });
      await store.revokeSerial('abc1', ago(DAY)); // its certificate expired an hour ago: gone
      await store.revokeSerial('def2', ago(DAY)); // not in the log: its expiry is unknown, kept
      await store.revokeIdentity(IDENTITY, ago(DAY)); // kept for good
      assert.equal((await store.prune(NOW, ago(30 * DAY))).revocations, 2);
      assert.deepEqual(await subjects(store), [`identity:${IDENTITY}`, 'serial:def2', 'token:tok-new']);
    });

    test('a second prune at the same time finds nothing more', async () => {
      const store = await subject.fresh();
      await enrollment(store, 'e-old', ago(10 * DAY));
      await store.revokeSerial('abc1', ago(DAY));
      await store.recordIssued({
        serial: 'fed3',
        identity: IDENTITY,
        nodeId: null,
        enrollmentId: null,
        notBefore: ago(3 * DAY).toISOString(),
        notAfter: ago(2 * DAY).toISOString(),
        issuedAt: ago(3 * DAY).toISOString(),
      });
      await store.revokeSerial('fed3', ago(DAY));
      assert.deepEqual(await store.prune(NOW, ago(DAY)), { enrollments: 1, revocations: 1 });
      assert.deepEqual(await store.prune(NOW, ago(DAY)), { enrollments: 0, revocations: 0 });
      assert.deepEqual(await subjects(store), ['serial:abc1']);
    });
  });
}
