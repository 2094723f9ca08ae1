// The SharedStore contract (store/shared-store.ts), run against both implementations: SQLite (two
// connections to one file) and a real PostgreSQL (two pools to one database, as two replicas would
// open it). Then what only PostgreSQL promises: migrations under a lock, a newer schema refused, the
// CA root created once by replicas starting together.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../../support/eventually.js';
import { silentLogger } from '../../../log/logger.js';
import pg from 'pg';
import { PG_MIGRATIONS } from '../../../store/postgres/migrations.js';
import { PostgresStore } from '../../../store/postgres/postgres-store.js';
import type { SharedStore } from '../../../store/shared-store.js';
import { SqliteSharedStore } from '../../../store/sqlite-shared.js';
import { Store } from '../../../store/store.js';
import { startPostgres, type PostgresServer } from '../../support/postgres.js';

const ORDERS = 'spiffe://cluster.local/ns/shop/sa/orders';
const HOUR = 3600_000;
const NOW = new Date('2026-05-01T00:00:00Z');

/** Two replicas' views of one fresh shared store. */
type Pair = () => Promise<[SharedStore, SharedStore]>;

const hash = (token: string): string => createHash('sha256').update(token).digest('hex');

let counter = 0;
async function newToken(store: SharedStore, uses: number, expiresAt = new Date(NOW.getTime() + HOUR)) {
  counter += 1;
  const token = { id: `tok${counter}`, secret: `tok${counter}.secret`, uses };
  await store.insertJoinToken({
    id: token.id,
    hash: hash(token.secret),
    identity: ORDERS,
    expiresAt: expiresAt.toISOString(),
    uses,
  });
  return token;
}

function contract(name: string, pair: Pair): void {
  describe(`SharedStore contract: ${name}`, () => {
    test('every migration is applied, and both replicas see the same version', async () => {
      const [a, b] = await pair();
      assert.ok((await a.schemaVersion()) > 0);
      assert.equal(await a.schemaVersion(), await b.schemaVersion());
    });

    test('CA material created by replicas at once is one value, seen by both', async () => {
      const [a, b] = await pair();
      const make = (label: string) => async () => Buffer.from(`root from ${label}`);
      const [fromA, fromB] = await Promise.all([
        a.getOrCreateMaterial('roots', make('a')),
        b.getOrCreateMaterial('roots', make('b')),
      ]);
      assert.deepEqual(fromA, fromB);
      assert.deepEqual(await b.getMaterial('roots'), fromA);
      assert.deepEqual(await a.getOrCreateMaterial('roots', make('again')), fromA);
    });

    test('replacing material is compare-and-set', async () => {
      const [a, b] = await pair();
      const first = await a.getOrCreateMaterial('roots', async () => Buffer.from('v1'));
      assert.equal(await b.replaceMaterial('roots', first, Buffer.from('v2')), true);
      assert.equal(
        await a.replaceMaterial('roots', first, Buffer.from('v3')),
        false,
        'a stale expected value loses',
      );
      assert.deepEqual(await a.getMaterial('roots'), Buffer.from('v2'));
    });

    test('a single-use token raced on two replicas is spent exactly once', async () => {
      const [a, b] = await pair();
      const token = await newToken(a, 1);
      const attempts = Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).consumeJoinToken(hash(token.secret), NOW),
      );
      const spent = (await Promise.all(attempts)).filter((identity) => identity !== undefined);
      assert.deepEqual(spent, [ORDERS]);
      assert.equal((await a.findJoinToken(hash(token.secret)))?.usesLeft, 0);
    });

    test('a three-use token raced on two replicas is spent exactly three times', async () => {
      const [a, b] = await pair();
      const token = await newToken(b, 3);
      const attempts = Array.from({ length: 12 }, (_, i) =>
        (i % 2 ? a : b).consumeJoinToken(hash(token.secret), NOW),
      );
      const spent = (await Promise.all(attempts)).filter((identity) => identity !== undefined);
      assert.equal(spent.length, 3);
    });

    test('a refunded use can be spent again; an expired or unknown token cannot be spent', async () => {
      const [a, b] = await pair();
      const token = await newToken(a, 1);
      assert.equal(await b.consumeJoinToken(hash(token.secret), NOW), ORDERS);
      assert.equal(await a.consumeJoinToken(hash(token.secret), NOW), undefined);
      await a.refundJoinToken(hash(token.secret));
      assert.equal(await b.consumeJoinToken(hash(token.secret), NOW), ORDERS);
      const expired = await newToken(a, 1, new Date(NOW.getTime() - 1));
      assert.equal(await b.consumeJoinToken(hash(expired.secret), NOW), undefined);
      assert.equal(await b.consumeJoinToken(hash('nobody'), NOW), undefined);
      assert.equal(await b.findJoinToken(hash('nobody')), undefined);
      assert.ok((await b.listJoinTokens()).some((t) => t.id === token.id));
    });

    test("revoking a token on one replica revokes its enrollments and moves the other's revision", async () => {
      const [a, b] = await pair();
      const token = await newToken(a, 2);
      await a.startEnrollment({
        id: `enr-${token.id}`,
        identity: ORDERS,
        tokenId: token.id,
        startedAt: NOW.toISOString(),
      });
      const before = await a.revocationRevision();
      const outcome = await b.revokeJoinToken(token.id, NOW);
      assert.deepEqual(outcome, { found: true, tokens: 1, enrollments: 1 });
      assert.ok((await a.revocationRevision()) > before, 'the other replica sees a new revision');
      assert.notEqual((await a.getEnrollment(`enr-${token.id}`))?.revokedAt, null);
      assert.equal(
        await a.consumeJoinToken(hash(token.secret), NOW),
        undefined,
        'a revoked token is not spent',
      );
      assert.equal((await a.listRevocations())[0]?.subject, token.id);
      assert.deepEqual(await a.revokeJoinToken('no-such-token', NOW), {
        found: false,
        tokens: 0,
        enrollments: 0,
      });
    });

    test("revoking a certificate or an identity on one replica reaches the other's deny list", async () => {
      const [a, b] = await pair();
      const token = await newToken(a, 1);
      const enrollment = `enr-${token.id}`;
      await a.startEnrollment({
        id: enrollment,
        identity: ORDERS,
        tokenId: token.id,
        startedAt: NOW.toISOString(),
      });
      const cert = (serial: string, enrollmentId: string | null) => ({
        serial,
        identity: ORDERS,
        nodeId: 'vm-1',
        enrollmentId,
        notBefore: NOW.toISOString(),
        notAfter: new Date(NOW.getTime() + HOUR).toISOString(),
        issuedAt: NOW.toISOString(),
      });
      await a.recordIssued(cert('0abc12', enrollment));
      await a.recordIssued(cert('abc2', enrollment));
      assert.equal((await b.issuedBySerial('ABC12'))?.enrollmentId, enrollment, 'found on the other replica');
      assert.equal(await b.countEnrollmentsByToken(token.id), 1);
      const outcome = await b.revokeSerial('0ABC12', NOW, 'key stolen');
      assert.deepEqual(outcome, { tokens: 0, enrollments: 1, enrollmentId: enrollment });
      const denied = new Map((await a.deniedSerials(NOW)).map((d) => [d.serial, d.reason]));
      assert.equal(denied.get('abc12'), 'key stolen');
      assert.equal(denied.get('abc2'), 'key stolen', "the enrollment's other certificate too");
      assert.equal(
        (await a.deniedSerials(new Date(NOW.getTime() + 2 * HOUR))).some((d) => d.serial === 'abc2'),
        false,
        'an expired certificate is left to TLS',
      );

      await a.recordIssued(cert('def1', null));
      assert.deepEqual(await a.revokeIdentity(ORDERS, NOW), { tokens: 1, enrollments: 0 });
      assert.ok(
        (await b.deniedSerials(NOW)).some((d) => d.serial === 'def1'),
        'a pre-enrollment certificate',
      );
      await b.removeEnrollment(enrollment);
      assert.equal(await a.getEnrollment(enrollment), undefined);
    });

    test('a revocation on one replica is announced to a watcher on the other', async () => {
      const [a, b] = await pair();
      const token = await newToken(a, 1);
      let changes = 0;
      const stop = a.watchRevocations(() => (changes += 1), 100);
      try {
        await new Promise((resolve) => setTimeout(resolve, 300)); // the watcher has its baseline
        assert.equal(changes, 0);
        await b.revokeJoinToken(token.id, NOW);
        await eventually(() => changes > 0, { timeoutMs: 10_000, what: 'the watcher to see the revocation' });
      } finally {
        stop();
      }
    });

    test('config loads one replica writes are read by the other, of their build only, newest per path', async () => {
      const [a, b] = await pair();
      const row = (path: string, contentHash: string, format = 'build-1') => ({
        path,
        contentHash,
        format,
        load: `{"resources":[],"warnings":[],"of":"${path}@${contentHash}"}`,
      });
      await a.writeConfigLoads(
        [row('a.yaml', 'h1'), row('b.yaml', 'h2'), row('old.yaml', 'h3', 'build-0')],
        [],
      );
      assert.deepEqual(
        [...(await b.configLoads('build-1', 100)).values()],
        [row('a.yaml', 'h1'), row('b.yaml', 'h2')],
      );
      assert.deepEqual(
        [...(await b.configLoads('build-0', 100)).keys()],
        ['old.yaml'],
        'another build: its own rows',
      );

      // b's newer text of a.yaml replaces a's row; a removes b.yaml.
      await b.writeConfigLoads([row('a.yaml', 'h9')], []);
      await a.writeConfigLoads([], ['b.yaml']);
      assert.deepEqual([...(await a.configLoads('build-1', 100)).values()], [row('a.yaml', 'h9')]);
      assert.equal((await a.configLoads('build-1', 0)).size, 0, 'bounded by the limit');
    });
  });
}

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

contract('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-shared-'));
  dirs.push(dir);
  const stores = [
    Store.open({ dataDir: dir, logger: silentLogger }),
    Store.open({ dataDir: dir, logger: silentLogger }),
  ];
  after(() => stores.forEach((s) => s.close()));
  return [new SqliteSharedStore(stores[0]!), new SqliteSharedStore(stores[1]!)];
});

let server: PostgresServer | undefined;
const opened: PostgresStore[] = [];
let databases = 0;

async function freshDatabase(): Promise<string> {
  if (!server) server = await startPostgres();
  databases += 1;
  return server.createDatabase(`portolan_${databases}`);
}

/** Sessions LISTENing anywhere in the server (pg_stat_activity shows the LISTEN as their last query). */
async function listeners(): Promise<number> {
  const client = new pg.Client({ connectionString: server!.url('postgres') });
  await client.connect();
  try {
    const res = await client.query<{ n: string }>(
      "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE query LIKE 'LISTEN portolan_revocations%'",
    );
    return Number(res.rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

/** Ends the server-side sessions of one application name (a replica's connection dying). */
async function terminate(applicationName: string): Promise<void> {
  const client = new pg.Client({ connectionString: server!.url('postgres') });
  await client.connect();
  try {
    await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      applicationName,
    ]);
  } finally {
    await client.end();
  }
}

async function openReplica(
  url: string,
  replica: string,
  extra: Partial<Parameters<typeof PostgresStore.open>[0]> = {},
) {
  const store = await PostgresStore.open({ url, replica, ...extra });
  opened.push(store);
  return store;
}

after(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
  await server?.destroy();
});

contract('PostgreSQL', async () => {
  const url = await freshDatabase();
  return Promise.all([openReplica(url, 'replica-a'), openReplica(url, 'replica-b')]);
});

describe('PostgreSQL store', () => {
  before(async () => {
    if (!server) server = await startPostgres();
  });

  test('replicas opening a fresh database at once apply each migration once', async () => {
    const url = await freshDatabase();
    const replicas = await Promise.all(['a', 'b', 'c'].map((r) => openReplica(url, r)));
    for (const r of replicas) assert.equal(await r.schemaVersion(), PG_MIGRATIONS.length);
  });

  test('the CA root is created once by replicas starting together', async () => {
    const url = await freshDatabase();
    const replicas = await Promise.all(['a', 'b', 'c'].map((r) => openReplica(url, r)));
    let created = 0;
    const values = await Promise.all(
      replicas.map((r) =>
        r.getOrCreateMaterial('roots', async () => {
          created += 1;
          await new Promise((resolve) => setTimeout(resolve, 50)); // a root takes a while to make
          return Buffer.from(`root by ${r.replica}`);
        }),
      ),
    );
    assert.equal(created, 1);
    assert.equal(new Set(values.map((v) => v.toString())).size, 1);
  });

  test('a database from a newer Portolan is refused, naming both versions', async () => {
    const url = await freshDatabase();
    await openReplica(url, 'newer', {
      migrations: [...PG_MIGRATIONS, 'CREATE TABLE from_the_future (x INT)'],
    });
    await assert.rejects(
      openReplica(url, 'older'),
      new RegExp(
        `schema version ${PG_MIGRATIONS.length + 1} is newer than this Portolan understands \\(${PG_MIGRATIONS.length}\\)`,
      ),
    );
  });

  test('LISTEN/NOTIFY announces a revocation without waiting for the poll', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([openReplica(url, 'a'), openReplica(url, 'b')]);
    const token = await newToken(a, 1);
    let changes = 0;
    const stop = a.watchRevocations(() => (changes += 1), 600_000);
    try {
      await eventually(async () => (await listeners()) > 0, { what: 'the LISTEN connection' });
      await b.revokeJoinToken(token.id, NOW);
      await eventually(() => changes > 0, { timeoutMs: 10_000, what: 'the notification' });
    } finally {
      stop();
    }
  });

  test('one replica leads a job; a dropped leader connection or a stopped leader hands it on', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([openReplica(url, 'a'), openReplica(url, 'b')]);
    let aLost = false;
    const leadA = a.lead('prune', (leading) => (aLost ||= !leading), 100);
    await eventually(() => leadA.isLeader(), { what: 'a to lead' });
    const leadB = b.lead('prune', undefined, 100);
    const other = b.lead('retire-roots', undefined, 100);
    try {
      await eventually(() => other.isLeader(), { what: 'b to lead another job' });
      assert.equal(leadB.isLeader(), false, 'one leader per job');
      // The leader's connection dies (as when its replica is killed): the lock is free again, and
      // exactly one of the two takes it (a, still alive here, competes too).
      await terminate('portolan a leader:prune');
      await eventually(() => aLost, { what: 'a to notice the loss' });
      await eventually(() => leadA.isLeader() !== leadB.isLeader(), { what: 'one new leader' });
      const [leader, follower] = leadA.isLeader() ? [leadA, leadB] : [leadB, leadA];
      await leader.stop();
      await eventually(() => follower.isLeader(), { what: 'the other replica to take over' });
    } finally {
      await Promise.all([leadA.stop(), leadB.stop(), other.stop()]);
    }
  });

  test('heartbeats list every replica with the proxies connected to it', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([openReplica(url, 'a'), openReplica(url, 'b')]);
    await a.heartbeat(NOW.toISOString(), ['vm-1', 'vm-2'], NOW);
    await b.heartbeat(NOW.toISOString(), [], new Date(NOW.getTime() + 1000));
    await a.heartbeat(NOW.toISOString(), ['vm-1'], new Date(NOW.getTime() + 2000));
    const replicas = await b.listReplicas();
    assert.deepEqual(
      replicas.map((r) => [r.replica, r.proxies]),
      [
        ['a', ['vm-1']],
        ['b', []],
      ],
    );
  });

  test('an unreachable database fails the open with the URL, its password hidden', async () => {
    const url = `postgres://portolan:hunter2@127.0.0.1:${server!.port}/no_such_database`;
    await assert.rejects(openReplica(url, 'x'), (err: Error) => {
      assert.match(err.message, /no_such_database/);
      assert.doesNotMatch(err.message, /hunter2/);
      return true;
    });
  });

  test('PostgreSQL stopped: calls fail fast, the watcher survives; back: the same store works again', async () => {
    const url = await freshDatabase();
    const [a, b] = await Promise.all([
      openReplica(url, 'a', { timeoutMs: 1000 }),
      openReplica(url, 'b', { timeoutMs: 1000 }),
    ]);
    const token = await newToken(a, 2);
    let changes = 0;
    const stop = a.watchRevocations(() => (changes += 1), 200);
    try {
      await server!.stop();
      await assert.rejects(b.consumeJoinToken(hash(token.secret), NOW));
      await server!.start();
      assert.equal(
        await eventually(() => b.consumeJoinToken(hash(token.secret), NOW), {
          what: 'the pool to reconnect',
        }),
        ORDERS,
      );
      // A pooled connection that died with the server may fail one more call; the next one works.
      await eventually(() => b.revokeJoinToken(token.id, NOW), { what: 'a revocation after the restart' });
      await eventually(() => changes > 0, { timeoutMs: 10_000, what: 'the watcher after the restart' });
    } finally {
      stop();
    }
  });
});
