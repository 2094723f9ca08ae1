// The store against real SQLite files in temporary directories.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { silentLogger } from '../../../log/logger.js';
import type { RegistrySnapshot } from '../../../model/change.js';
import { MIGRATIONS } from '../../../store/migrations.js';
import { HistoryTables } from '../../../store/history.js';
import { SnapshotTable, type GuardWrite } from '../../../store/snapshots.js';
import { DB_FILE, Store, StoreError, type StoreOptions } from '../../../store/store.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { eventually } from '../../support/eventually.js';
import { onTransaction } from '../../support/sqlite-transactions.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function open(t: TestContext, dataDir: string, options: Partial<StoreOptions> = {}): Store {
  const store = Store.open({ dataDir, logger: silentLogger, ...options });
  t.after(() => store.close());
  return store;
}

function snapshot(gen: number): RegistrySnapshot {
  const host = 'echo.store.internal';
  return {
    services: new Map([[host, service(host, [servicePort('grpc', 7070)])]]),
    endpoints: new Map([
      [host, [endpoint(`127.0.0.${gen}`, { grpc: 7070 }, { labels: { gen: String(gen) } })]],
    ]),
  };
}

test('a new store is created 0600, in WAL mode, at the newest schema version', (t) => {
  const dir = tempDir(t);
  const store = open(t, dir);
  assert.equal(store.schemaVersion(), MIGRATIONS.length);
  assert.equal(statSync(join(dir, DB_FILE)).mode & 0o777, 0o600);
  store.snapshots.save('mock', snapshot(1), new Date().toISOString());
  for (const f of readdirSync(dir).filter((f) => f.startsWith(DB_FILE))) {
    assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, f);
  }
  const raw = new Database(join(dir, DB_FILE), { readonly: true });
  t.after(() => raw.close());
  assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
});

test('a snapshot round-trips, and saving an identical one writes nothing', (t) => {
  const store = open(t, tempDir(t));
  assert.equal(store.snapshots.save('mock', snapshot(1), '2026-01-01T00:00:00.000Z'), true);
  assert.equal(store.snapshots.save('mock', snapshot(1), '2026-01-01T00:00:01.000Z'), false);
  const loaded = store.snapshots.load('mock');
  assert.deepEqual(loaded?.snapshot, snapshot(1));
  assert.equal(loaded?.syncedAt, '2026-01-01T00:00:00.000Z');
  assert.equal(store.snapshots.load('consul'), undefined);
});

test('an older schema is migrated at open and its data kept', (t) => {
  const dir = tempDir(t);
  const old = Store.open({ dataDir: dir, logger: silentLogger, migrateTo: 1 });
  assert.equal(old.schemaVersion(), 1);
  old.snapshots.save('mock', snapshot(3), '2026-01-01T00:00:00.000Z');
  old.history.recordRegistry('mock', 'synced', 'v1 era');
  old.close();

  const store = open(t, dir);
  assert.equal(store.schemaVersion(), MIGRATIONS.length);
  assert.deepEqual(store.snapshots.load('mock')?.snapshot, snapshot(3));
  assert.equal(store.history.recent(10)[0]?.detail, 'v1 era');
  assert.ok(store.ca.put('root-key', Buffer.from('secret')), 'tables of the newer migration exist');
});

test('a database from a newer Portolan is refused with its path and versions', (t) => {
  const dir = tempDir(t);
  open(t, dir).close();
  const raw = new Database(join(dir, DB_FILE));
  raw.pragma('user_version = 99');
  raw.close();
  assert.throws(
    () => Store.open({ dataDir: dir, logger: silentLogger }),
    (err: unknown) =>
      err instanceof StoreError &&
      err.message.includes(join(dir, DB_FILE)) &&
      /schema version 99 is newer/.test(err.message),
  );
});

test('a corrupted file is reported with its path and SQLite error, and --reset-store moves it aside', (t) => {
  const dir = tempDir(t);
  writeFileSync(
    join(dir, DB_FILE),
    'this is not a database, but it is long enough to look like one '.repeat(100),
  );
  assert.throws(
    () => Store.open({ dataDir: dir, logger: silentLogger }),
    (err: unknown) =>
      err instanceof StoreError &&
      err.path === join(dir, DB_FILE) &&
      /not a database/.test(err.message) &&
      /--reset-store/.test(err.message),
  );
  // The CA's state cannot be read out of garbage: a reset alone would mean a new CA root, so it is
  // refused and nothing is moved; with resetCa (--reset-ca) it starts anew.
  assert.throws(
    () => Store.open({ dataDir: dir, logger: silentLogger, reset: true }),
    (err: unknown) => err instanceof StoreError && /--reset-ca/.test(err.message),
  );
  assert.deepEqual(readdirSync(dir), [DB_FILE]);
  const store = open(t, dir, { reset: true, resetCa: true });
  assert.equal(store.schemaVersion(), MIGRATIONS.length);
  const aside = readdirSync(dir).filter((f) => f.startsWith(`${DB_FILE}.corrupt-`));
  assert.equal(aside.length, 1, 'the bad file is kept for inspection');
});

test('history keeps the newest rows within the limit', (t) => {
  const store = open(t, tempDir(t), { historyLimit: 5 });
  for (let i = 0; i < 200; i++) store.history.recordRegistry('mock', 'synced', `event ${i}`);
  const recent = store.history.recent(1000);
  assert.equal(recent.length, 5);
  assert.equal(recent[0]?.detail, 'event 199');
});

test('config history keeps the last accepted text, and forgets it when the file is removed', (t) => {
  const store = open(t, tempDir(t));
  store.history.recordConfig('a.yaml', 'accepted', { text: 'v1', resources: ['ServiceEntry/default/a'] });
  store.history.recordConfig('a.yaml', 'rejected', { text: 'v2 broken', error: 'a.yaml:1 bad' });
  assert.equal(store.history.lastAcceptedText('a.yaml'), 'v1');
  assert.deepEqual(
    store.history.recent(10).map((e) => [e.subject, e.event]),
    [
      ['a.yaml', 'rejected'],
      ['a.yaml', 'accepted'],
    ],
  );
  store.history.recordConfig('a.yaml', 'removed', {});
  assert.equal(store.history.lastAcceptedText('a.yaml'), undefined);
});

test('a failing write (a full disk) is counted and does not throw', (t) => {
  const store = open(t, tempDir(t), { maxPageCount: 12 });
  const big = snapshot(1);
  const host = 'echo.store.internal';
  const many = Array.from({ length: 5000 }, (_, i) =>
    endpoint(`10.${(i >> 8) & 255}.${i & 255}.1`, { grpc: 7070 }, { labels: { filler: 'x'.repeat(40) } }),
  );
  const huge: RegistrySnapshot = { services: big.services, endpoints: new Map([[host, many]]) };
  assert.equal(store.snapshots.save('mock', huge, new Date().toISOString()), false);
  assert.equal(store.writeErrors, 1);
  assert.equal(store.snapshots.load('mock'), undefined, 'nothing half-written');
});

/** One service per host, each with one endpoint labelled with its generation. */
function hostsSnapshot(gens: Readonly<Record<string, number>>): RegistrySnapshot {
  const entries = Object.entries(gens);
  return {
    services: new Map(entries.map(([h]) => [h, service(h, [servicePort('grpc', 7070)])])),
    endpoints: new Map(
      entries.map(([h, gen]) => [
        h,
        [endpoint(`127.0.0.${gen}`, { grpc: 7070 }, { labels: { gen: String(gen) } })],
      ]),
    ),
  };
}

test('a per-host save writes the hosts it names: changed, added and removed ones; the rest stay as saved', (t) => {
  const store = open(t, tempDir(t));
  assert.equal(store.snapshots.saveHosts('mock', hostsSnapshot({ a: 1, b: 1, c: 1 }), 'all', 't1'), true);
  assert.deepEqual(store.snapshots.load('mock')?.snapshot, hostsSnapshot({ a: 1, b: 1, c: 1 }));

  // b changed, c removed, d added; a differs too but is not named, so its row is not written.
  const next = hostsSnapshot({ a: 9, b: 2, d: 1 });
  assert.equal(store.snapshots.saveHosts('mock', next, ['b', 'c', 'd'], 't2'), true);
  const loaded = store.snapshots.load('mock');
  assert.deepEqual(loaded?.snapshot, hostsSnapshot({ a: 1, b: 2, d: 1 }));
  assert.equal(loaded?.syncedAt, 't2');

  // An endpoint list without a service (and the reverse) round-trips.
  const partial: RegistrySnapshot = {
    services: new Map([['s', service('s', [servicePort('grpc', 7070)])]]),
    endpoints: new Map([['e', []]]),
  };
  store.snapshots.saveHosts('mock', partial, 'all', 't3');
  assert.deepEqual(store.snapshots.load('mock')?.snapshot, partial);
});

test('a per-host save over a whole saved snapshot rewrites every host (no stale rows)', (t) => {
  const store = open(t, tempDir(t));
  store.snapshots.saveHosts('mock', hostsSnapshot({ a: 1, b: 1 }), 'all', 't1');
  store.snapshots.save('mock', hostsSnapshot({ c: 1 }), 't2');
  assert.deepEqual(store.snapshots.load('mock')?.snapshot, hostsSnapshot({ c: 1 }));
  store.snapshots.saveHosts('mock', hostsSnapshot({ c: 2 }), ['c'], 't3');
  assert.deepEqual(store.snapshots.load('mock')?.snapshot, hostsSnapshot({ c: 2 }));
});

test('a per-host save that fails half-way (a full disk) leaves the previous snapshot whole', (t) => {
  const store = open(t, tempDir(t), { maxPageCount: 14 });
  const first = hostsSnapshot({ a: 1, b: 1 });
  assert.equal(store.snapshots.saveHosts('mock', first, 'all', 't1'), true);
  const many = Array.from({ length: 5000 }, (_, i) =>
    endpoint(`10.${(i >> 8) & 255}.${i & 255}.1`, { grpc: 7070 }, { labels: { filler: 'x'.repeat(40) } }),
  );
  const second = hostsSnapshot({ a: 2, b: 2 });
  const huge: RegistrySnapshot = {
    services: second.services,
    endpoints: new Map([...second.endpoints, ['b', many]]),
  };
  assert.equal(store.snapshots.saveHosts('mock', huge, ['a', 'b'], 't2'), false);
  assert.equal(store.writeErrors, 1);
  const loaded = store.snapshots.load('mock');
  assert.deepEqual(loaded?.snapshot, first, 'a is not written without b');
  assert.equal(loaded?.syncedAt, 't1');
});

test('proxy connections are recorded with their last ACKs and NACKs', (t) => {
  const store = open(t, tempDir(t));
  const id = store.proxies.connected('node-1', '127.0.0.1:5555', 'grpc');
  assert.ok(id !== undefined);
  store.proxies.disconnected(id, { CDS: { version: 'v1' } }, { LDS: { message: 'bad listener' } });
  const [rec] = store.proxies.recent(10);
  assert.equal(rec?.nodeId, 'node-1');
  assert.ok(rec?.disconnectedAt);
  assert.deepEqual(rec?.lastNacks, { LDS: { message: 'bad listener' } });
});

test('a read-only open (portolan history) does not create or change anything', (t) => {
  const dir = tempDir(t);
  assert.throws(() => Store.open({ dataDir: dir, logger: silentLogger, readonly: true }), StoreError);
  assert.deepEqual(readdirSync(dir), []);
});

test('history rows are written behind, together: readers through the store see them at once, the file after the window or on close', async (t) => {
  const dir = tempDir(t);
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  const other = new Database(join(dir, DB_FILE), { readonly: true });
  t.after(() => other.close());
  const rowsOnDisk = (): number =>
    (other.prepare('SELECT COUNT(*) AS n FROM config_history').get() as { n: number }).n;

  for (let i = 0; i < 5; i++)
    store.history.recordConfig(`f${i}.yaml`, 'accepted', { text: `v${i}`, resources: [] });
  store.history.recordConfig('f0.yaml', 'removed', {});
  // The change that recorded them did not wait for a write...
  assert.equal(rowsOnDisk(), 0);
  // ...yet the store answers from what it recorded.
  assert.equal(store.history.lastAcceptedText('f1.yaml'), 'v1');
  assert.equal(store.history.lastAcceptedText('f0.yaml'), undefined);
  // Within a window, all six are in the file.
  await eventually(() => assert.equal(rowsOnDisk(), 6));
  assert.equal(store.history.lastAcceptedText('f1.yaml'), 'v1');

  store.history.recordConfig('late.yaml', 'accepted', { text: 'late', resources: [] });
  store.close();
  assert.equal(rowsOnDisk(), 7, 'close writes what is pending');
});

test('history commits skip the fsync (synchronous NORMAL) and leave the connection FULL for the CA writes after them', (t) => {
  const dir = tempDir(t);
  const db = new Database(join(dir, 'h.db'));
  t.after(() => db.close());
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  for (const m of MIGRATIONS) db.exec(m);
  const levels: number[] = [];
  const guard: GuardWrite = (_what, fn) => {
    levels.push(Number(db.pragma('synchronous', { simple: true })));
    return fn();
  };
  const seen: number[] = [];
  onTransaction(db, () => seen.push(Number(db.pragma('synchronous', { simple: true }))));
  const history = new HistoryTables(db, guard, 100);
  history.recordRegistry('mock', 'synced', 'one');
  history.recordRegistry('mock', 'synced', 'two');
  history.flush();
  assert.deepEqual(levels, [2], 'the guard ran once, at FULL');
  assert.deepEqual(seen, [1], 'the history transaction ran at NORMAL');
  assert.equal(Number(db.pragma('synchronous', { simple: true })), 2, 'FULL again after the flush');
  assert.equal((db.prepare('SELECT COUNT(*) AS n FROM registry_events').get() as { n: number }).n, 2);
});

test('registry snapshots are saved without an fsync of their own, and the connection is FULL after', (t) => {
  const dir = tempDir(t);
  const db = new Database(join(dir, 's.db'));
  t.after(() => db.close());
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  for (const m of MIGRATIONS) db.exec(m);
  const table = new SnapshotTable(db, (_what, fn) => fn());
  // The level at which each statement is prepared: the ones inside the save's transaction tell.
  const prepared: [string, number][] = [];
  const prepare = db.prepare.bind(db);
  db.prepare = (sql: string) => {
    prepared.push([
      sql.trim().split(/\s+/).slice(0, 3).join(' '),
      Number(db.pragma('synchronous', { simple: true })),
    ]);
    return prepare(sql);
  };
  assert.equal(table.saveHosts('mock', snapshot(1), 'all', new Date().toISOString()), true);
  assert.deepEqual(
    prepared.filter(([sql]) => sql.startsWith('INSERT INTO registry_snapshots')).map(([, level]) => level),
    [1],
  );
  assert.equal(Number(db.pragma('synchronous', { simple: true })), 2);
  db.prepare = prepare;
  assert.equal(table.load('mock')?.snapshot.services.size, 1);
});

test('history rows name the replica that wrote them; rows from before migration 7 read as "", also without migrating', (t) => {
  const dir = tempDir(t);
  const old = Store.open({ dataDir: dir, logger: silentLogger, migrateTo: 6 });
  old.history.recordConfig('a.yaml', 'accepted', { text: 'old era' });
  old.history.recordRegistry('mock', 'synced');
  old.close();
  // `portolan history` opens read-only and does not migrate: the untagged rows still read.
  const reader = open(t, dir, { readonly: true });
  assert.deepEqual(
    reader.history.recent(10).map((e) => e.replica),
    ['', ''],
  );
  reader.close();
  const store = open(t, dir, { replica: 'cp-2' });
  store.history.recordConfig('a.yaml', 'accepted', { text: 'new era' });
  store.history.recordRegistry('mock', 'failed', 'gone');
  // Rows of one millisecond have no order between the two tables: compare as a set.
  assert.deepEqual(
    store.history
      .recent(10)
      .map((e) => `${e.subject} ${e.event} ${e.replica || '-'}`)
      .sort(),
    ['a.yaml accepted -', 'a.yaml accepted cp-2', 'mock failed cp-2', 'mock synced -'],
  );
});
