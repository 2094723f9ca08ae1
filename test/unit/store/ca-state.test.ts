// The CA's state in the store: enrollments, revocations and what each reaches, the issuance log's
// pruning, the v3 → v4 migration, --reset-store carrying the CA over from a damaged file, and the
// data directory's lock.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { randomSerial } from '../../../ca/certificates.js';
import { silentLogger } from '../../../log/logger.js';
import { DataDirLockedError, LOCK_FILE, lockDataDir } from '../../../store/data-dir-lock.js';
import { normalizeSerial } from '../../../store/revocations.js';
import { DB_FILE, Store, StoreError, type StoreOptions } from '../../../store/store.js';
import { eventually } from '../../support/eventually.js';

const ORDERS = 'spiffe://cluster.local/ns/shop/sa/orders';
const CART = 'spiffe://cluster.local/ns/shop/sa/cart';
const HOUR = 3600_000;
const T0 = new Date('2026-05-01T00:00:00Z');

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-ca-state-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function open(t: TestContext, dataDir: string, options: Partial<StoreOptions> = {}): Store {
  const store = Store.open({ dataDir, logger: silentLogger, ...options });
  t.after(() => store.close());
  return store;
}

/** Records a certificate of `enrollment` valid for an hour from T0; returns its serial. */
function issue(
  store: Store,
  identity: string,
  enrollmentId: string | null,
  notAfter = new Date(T0.getTime() + HOUR),
): string {
  const serial = randomSerial();
  store.ca.recordIssued({
    serial,
    identity,
    nodeId: null,
    enrollmentId,
    notBefore: T0.toISOString(),
    notAfter: notAfter.toISOString(),
    issuedAt: T0.toISOString(),
  });
  return serial;
}

function token(store: Store, id: string, identity: string): void {
  assert.ok(
    store.joinTokens.insert({
      id,
      hash: `hash-${id}`,
      identity,
      expiresAt: new Date(T0.getTime() + HOUR).toISOString(),
      uses: 5,
    }),
  );
}

test('revoking a join token reaches the enrollments it started, and their certificates', (t) => {
  const store = open(t, tempDir(t));
  token(store, 'tok1', ORDERS);
  token(store, 'tok2', ORDERS);
  store.enrollments.start({ id: 'e1', identity: ORDERS, tokenId: 'tok1', startedAt: T0.toISOString() });
  store.enrollments.start({ id: 'e2', identity: ORDERS, tokenId: 'tok2', startedAt: T0.toISOString() });
  const first = issue(store, ORDERS, 'e1');
  const renewed = issue(store, ORDERS, 'e1');
  const other = issue(store, ORDERS, 'e2');
  const before = store.revocations.revision();

  assert.equal(store.joinTokens.revoke('tok1', T0), true);
  assert.ok(store.revocations.revision() > before, 'the revision moves, so a running serve reloads');
  assert.ok(store.enrollments.get('e1')?.revokedAt);
  assert.equal(store.enrollments.get('e2')?.revokedAt, null);
  assert.deepEqual(
    new Set(store.revocations.deniedSerials(T0).map((d) => d.serial)),
    new Set([first, renewed].map(normalizeSerial)),
  );
  assert.ok(
    !store.revocations
      .deniedSerials(T0)
      .map((d) => d.serial)
      .includes(normalizeSerial(other)),
  );
  assert.equal(store.joinTokens.revoke('tok1', T0), false, 'a token is revoked once');
});

test('revoking an identity reaches all its enrollments, its unused tokens and its certificates from before enrollments', (t) => {
  const store = open(t, tempDir(t));
  token(store, 'unused', ORDERS);
  token(store, 'cart-token', CART);
  store.enrollments.start({ id: 'e1', identity: ORDERS, tokenId: 'x', startedAt: T0.toISOString() });
  store.enrollments.start({ id: 'e3', identity: CART, tokenId: 'y', startedAt: T0.toISOString() });
  const enrolled = issue(store, ORDERS, 'e1');
  const legacy = issue(store, ORDERS, null);
  const cart = issue(store, CART, 'e3');
  const expired = issue(store, ORDERS, null, new Date(T0.getTime() - 1));

  const outcome = store.revocations.revokeIdentity(ORDERS, T0, 'VM stolen');
  assert.deepEqual(outcome, { enrollments: 1, tokens: 1 });
  assert.equal(store.enrollments.get('e1')?.revokedReason, 'VM stolen');
  assert.ok(store.joinTokens.list().find((r) => r.id === 'unused')?.revokedAt);
  assert.equal(store.joinTokens.list().find((r) => r.id === 'cart-token')?.revokedAt, null);
  const denied = new Set(store.revocations.deniedSerials(T0).map((d) => d.serial));
  assert.ok(denied.has(normalizeSerial(enrolled)) && denied.has(normalizeSerial(legacy)));
  assert.ok(!denied.has(normalizeSerial(cart)));
  assert.ok(!denied.has(normalizeSerial(expired)), 'an expired certificate is refused by TLS already');

  // A new enrollment of the identity, after the revocation, is not reached by it.
  store.enrollments.start({ id: 'e4', identity: ORDERS, tokenId: 'new', startedAt: T0.toISOString() });
  const fresh = issue(store, ORDERS, 'e4');
  assert.ok(
    !store.revocations
      .deniedSerials(T0)
      .map((d) => d.serial)
      .includes(normalizeSerial(fresh)),
  );
});

test('revoking a serial reaches the enrollment it belongs to; an unknown serial is refused alone', (t) => {
  const store = open(t, tempDir(t));
  store.enrollments.start({ id: 'e1', identity: ORDERS, tokenId: 'x', startedAt: T0.toISOString() });
  const stolen = issue(store, ORDERS, 'e1');
  const renewedByThief = issue(store, ORDERS, 'e1');
  // As openssl prints it: upper case, with any leading zero.
  const outcome = store.revocations.revokeSerial(`0${stolen.toUpperCase()}`, T0);
  assert.equal(outcome.enrollmentId, 'e1');
  assert.deepEqual(
    new Set(store.revocations.deniedSerials(T0).map((d) => d.serial)),
    new Set([stolen, renewedByThief].map(normalizeSerial)),
  );
  assert.deepEqual(store.revocations.revokeSerial('AB:CD:EF', T0), { tokens: 0, enrollments: 0 });
  assert.ok(
    store.revocations
      .deniedSerials(T0)
      .map((d) => d.serial)
      .includes('abcdef'),
  );
});

test('the issuance log keeps the newest rows within the history limit, and every certificate still valid', (t) => {
  const store = open(t, tempDir(t), { historyLimit: 5 });
  const valid = issue(store, ORDERS, 'e1', new Date(Date.now() + HOUR));
  for (let i = 0; i < 250; i++) issue(store, ORDERS, 'e1', new Date(Date.now() - HOUR));
  const kept = store.ca.issued(1000);
  assert.ok(kept.length <= 5 + 100, `pruned to about the limit, kept ${kept.length}`);
  assert.ok(
    store.ca.issuedBySerial(valid),
    'a valid certificate keeps its row: renewals find their enrollment',
  );
});

test('ended enrollments and spent revocations are pruned', (t) => {
  const store = open(t, tempDir(t));
  store.enrollments.start({ id: 'old', identity: ORDERS, tokenId: 'x', startedAt: T0.toISOString() });
  store.enrollments.start({
    id: 'new',
    identity: ORDERS,
    tokenId: 'y',
    startedAt: new Date(T0.getTime() + 10 * HOUR).toISOString(),
  });
  assert.equal(store.enrollments.pruneStartedBefore(new Date(T0.getTime() + HOUR)), 1);
  assert.deepEqual(
    store.enrollments.list().map((e) => e.id),
    ['new'],
  );
  const serial = issue(store, ORDERS, null);
  store.revocations.revokeSerial(serial, T0);
  assert.equal(store.revocations.prune(new Date(T0.getTime() + 2 * HOUR)), 1, 'the certificate has expired');
  assert.equal(store.revocations.list().length, 0);
});

test('a v3 store is migrated: its issued certificates are kept, as from before enrollments', (t) => {
  const dir = tempDir(t);
  const old = Store.open({ dataDir: dir, logger: silentLogger, migrateTo: 3 });
  (old as unknown as { db: { prepare(sql: string): { run(...a: unknown[]): void } } }).db
    .prepare(
      'INSERT INTO issued_certificates (serial, identity, node_id, not_before, not_after, issued_at) VALUES (?, ?, ?, ?, ?, ?)',
    )
    .run(
      '0abc',
      ORDERS,
      null,
      T0.toISOString(),
      new Date(T0.getTime() + HOUR).toISOString(),
      T0.toISOString(),
    );
  old.close();
  const store = open(t, dir);
  const row = store.ca.issuedBySerial('ABC');
  assert.equal(row?.identity, ORDERS);
  assert.equal(row?.enrollmentId, null);
});

test('--reset-store carries the CA state over from a damaged database; nothing is lost', (t) => {
  const dir = tempDir(t);
  const first = Store.open({ dataDir: dir, logger: silentLogger });
  first.ca.put(
    'roots',
    Buffer.from('[{"certPem":"ROOT","key":"KEY","signingFrom":"2026-01-01T00:00:00.000Z"}]'),
  );
  token(first, 'tok1', ORDERS);
  first.enrollments.start({ id: 'e1', identity: ORDERS, tokenId: 'tok1', startedAt: T0.toISOString() });
  // History fills pages after the CA's; damage the last of them.
  for (let i = 0; i < 2000; i++)
    first.history.recordRegistry('mock', 'synced', `event ${i} ${'x'.repeat(200)}`);
  first.close();
  const path = join(dir, DB_FILE);
  const size = statSync(path).size;
  const fd = openSync(path, 'r+');
  writeSync(fd, Buffer.alloc(8192, 0xa5), 0, 8192, size - 3 * 4096);
  closeSync(fd);
  assert.throws(() => Store.open({ dataDir: dir, logger: silentLogger }), StoreError);

  const store = open(t, dir, { reset: true });
  assert.equal(
    store.ca.get('roots')?.toString(),
    '[{"certPem":"ROOT","key":"KEY","signingFrom":"2026-01-01T00:00:00.000Z"}]',
  );
  assert.equal(store.joinTokens.list()[0]?.id, 'tok1');
  assert.equal(store.enrollments.get('e1')?.identity, ORDERS);
  const aside = readdirSync(dir).filter((f) => f.startsWith(`${DB_FILE}.corrupt-`) && !/-(wal|shm)$/.test(f));
  assert.equal(aside.length, 1);
});

test('the data directory lock: a second owner is refused naming the first pid, until it is released', (t) => {
  const dir = tempDir(t);
  const lock = lockDataDir(dir);
  assert.throws(
    () => lockDataDir(dir),
    (err: unknown) =>
      err instanceof DataDirLockedError &&
      err.holderPid === process.pid &&
      err.message.includes(`pid ${process.pid}`),
  );
  assert.equal((statSync(join(dir, LOCK_FILE)).mode & 0o777).toString(8), '600');
  lock.release();
  lockDataDir(dir).release();
});

test('a lock held by a process that was killed (-9) is free again: the kernel releases it', async (t) => {
  const dir = tempDir(t);
  const lockModule = fileURLToPath(new URL('../../../store/data-dir-lock.js', import.meta.url));
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { lockDataDir } from ${JSON.stringify(lockModule)}; lockDataDir(${JSON.stringify(dir)}); console.log('locked'); setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  t.after(() => child.exitCode === null && child.kill('SIGKILL'));
  await eventually(() => assert.match(readFileSync(join(dir, LOCK_FILE), 'utf8'), /"pid"/), {
    timeoutMs: 10_000,
  });
  assert.throws(
    () => lockDataDir(dir),
    (err: unknown) => err instanceof DataDirLockedError && err.holderPid === child.pid,
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  lockDataDir(dir).release();
});
