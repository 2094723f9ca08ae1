// Request budgets (per peer, per identity) and enrollments on the CA's side: a budget refills over
// time and stays bounded in keys; an enrollment continues through renewals until its maximum age,
// and a certificate from before enrollments is adopted.
import { SqliteSharedStore } from '../../../store/sqlite-shared.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { Enrollments, EnrollmentRefused } from '../../../ca/enrollments.js';
import { KeyedRateLimiter, peerAddress } from '../../../ca/rate-limit.js';
import { silentLogger } from '../../../log/logger.js';
import { Store } from '../../../store/store.js';

const ID = 'spiffe://cluster.local/ns/shop/sa/orders';

function openStore(t: TestContext): Store {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-enroll-'));
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  t.after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

test('a rate limit: a burst of `limit`, then one per period/limit; per key; bounded', () => {
  let now = 0;
  const limiter = new KeyedRateLimiter({ limit: 3, perMs: 3000 }, () => now, 100);
  for (let i = 0; i < 3; i++) assert.deepEqual(limiter.take('a'), { ok: true });
  assert.deepEqual(limiter.take('a'), { ok: false, retryAfterMs: 1000 });
  assert.deepEqual(limiter.take('b'), { ok: true }, 'another key has its own budget');
  now = 1000;
  assert.deepEqual(limiter.take('a'), { ok: true });
  assert.equal(limiter.take('a').ok, false);
  for (let i = 0; i < 500; i++) limiter.take(`peer-${i}`);
  assert.ok(limiter.size <= 100, `at most maxKeys buckets, has ${limiter.size}`);
  assert.equal(peerAddress('ipv4:10.1.2.3:5555'), '10.1.2.3');
  assert.equal(peerAddress('ipv6:[::1]:5555'), '::1');
  assert.equal(peerAddress('127.0.0.1:44321'), '127.0.0.1');
});

test('an enrollment continues through renewals until its maximum age, then is refused', async (t) => {
  const store = openStore(t);
  const t0 = new Date('2026-05-01T00:00:00Z');
  const enrollments = new Enrollments(new SqliteSharedStore(store), 3600);
  const first = await enrollments.begin(ID, 'tok', t0);
  assert.equal(first.endsAt.getTime(), t0.getTime() + 3600_000);
  store.ca.recordIssued({
    serial: '0abc',
    identity: ID,
    nodeId: null,
    enrollmentId: first.id,
    notBefore: t0.toISOString(),
    notAfter: first.endsAt.toISOString(),
    issuedAt: t0.toISOString(),
  });
  const renewed = await enrollments.continueFrom('ABC', ID, new Date(t0.getTime() + 1800_000));
  assert.deepEqual([renewed.id, renewed.isNew, renewed.endsAt], [first.id, false, first.endsAt]);
  await assert.rejects(
    () => enrollments.continueFrom('abc', ID, first.endsAt),
    (err: unknown) => err instanceof EnrollmentRefused && /maximum age of 3600s/.test(err.message),
  );
  // A certificate the log knows without an enrollment (issued before them) starts a new one.
  store.ca.recordIssued({
    serial: 'def0',
    identity: ID,
    nodeId: null,
    notBefore: '',
    notAfter: '',
    issuedAt: '',
  });
  const adopted = await enrollments.continueFrom('def0', ID, t0);
  assert.equal(adopted.isNew, true);
  assert.equal(store.enrollments.get(adopted.id)?.tokenId, null);
});
