// The store's write-behind queue on a real SQLite file: writes deferred within a window are committed
// together when it ends, a due snapshot save takes the waiting rows into its own transaction, and a
// failed commit stores none of them and says so to each.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { MockRegistry } from '../../../adapters/mock/registry.js';
import { silentLogger } from '../../../log/logger.js';
import { RegistryPersistence } from '../../../store/registry-persistence.js';
import { Store } from '../../../store/store.js';
import { WriteBehind } from '../../../store/write-behind.js';
import { eventually } from '../../support/eventually.js';
import { onTransaction } from '../../support/sqlite-transactions.js';
import { endpoint, mockService, servicePort } from '../../support/model-fixtures.js';

function table(t: TestContext): Database.Database {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-write-behind-'));
  const db = new Database(join(dir, 'w.db'));
  t.after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v TEXT NOT NULL)');
  return db;
}

const rows = (db: Database.Database): string[] =>
  db
    .prepare<[], { v: string }>('SELECT v FROM t ORDER BY rowid')
    .all()
    .map((r) => r.v);

const insert = (db: Database.Database, v: string | null) => () =>
  void db.prepare('INSERT INTO t (v) VALUES (?)').run(v);

test('writes deferred within a window are committed together when it ends, in order', async (t) => {
  const db = table(t);
  const commits: number[] = [];
  onTransaction(db, () => commits.push(rows(db).length));
  const writes = new WriteBehind(db, (_what, fn) => fn(), 40);
  for (const v of ['a', 'b', 'c']) writes.defer({ what: v, write: insert(db, v) });
  assert.deepEqual(rows(db), [], 'nothing is written before the window ends');
  await eventually(() => assert.deepEqual(rows(db), ['a', 'b', 'c']));
  assert.deepEqual(commits, [0], 'one transaction for the window');
});

test('a flush with a write of its own takes the waiting writes into its transaction, at once', (t) => {
  const db = table(t);
  const writes = new WriteBehind(db, (_what, fn) => fn(), 60_000);
  writes.defer({ what: 'a', write: insert(db, 'a') });
  writes.defer({ what: 'b', write: insert(db, 'b') });
  writes.flush({ what: 'save', write: insert(db, 'save') });
  assert.deepEqual(rows(db), ['a', 'b', 'save']);
  writes.flush();
  assert.deepEqual(rows(db), ['a', 'b', 'save'], 'nothing is written twice');
});

test('a failed commit stores none of the window: each write is told, and the failure is guarded', (t) => {
  const db = table(t);
  const failures: string[] = [];
  const writes = new WriteBehind(
    db,
    (what, fn) => {
      try {
        return fn();
      } catch {
        failures.push(what);
        return undefined;
      }
    },
    60_000,
  );
  const told: string[] = [];
  writes.defer({ what: 'a', write: insert(db, 'a'), failed: () => told.push('a') });
  // NOT NULL: this one throws, and the whole transaction rolls back.
  writes.defer({ what: 'bad', write: insert(db, null), failed: () => told.push('bad') });
  writes.flush();
  assert.deepEqual(rows(db), []);
  assert.deepEqual(told, ['a', 'bad']);
  assert.deepEqual(failures, ['2 deferred writes']);
  writes.defer({ what: 'c', write: insert(db, 'c') });
  writes.flush();
  assert.deepEqual(rows(db), ['c'], 'the queue goes on after a failure');
});

test('history rows ride with a registry snapshot save that falls due before their window ends', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-write-behind-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  t.after(() => store.close());
  // A second connection sees only what is committed.
  const reader = new Database(join(dir, 'portolan.db'), { readonly: true });
  t.after(() => reader.close());
  const count = (sql: string): number => reader.prepare<[], { n: number }>(sql).get()?.n ?? 0;
  const registry = new MockRegistry();
  registry.putService(mockService('a.internal', [servicePort('grpc', 7070)]));
  registry.setEndpoints('a.internal', [endpoint('10.0.0.1', { grpc: 7070 })]);
  const persistence = new RegistryPersistence(store, [registry], silentLogger, { debounceMs: 10 });
  persistence.watch();
  t.after(() => persistence.stop());
  await registry.start();
  await eventually(() => assert.equal(count('SELECT COUNT(*) AS n FROM registry_hosts'), 1));
  // Recorded just before a change: the save 10 ms later commits it, well inside its 600 ms window.
  store.history.recordConfig('a.yaml', 'accepted', { text: 'kind: x\n', resources: ['x'] });
  registry.setEndpoints('a.internal', [endpoint('10.0.0.2', { grpc: 7070 })]);
  await eventually(
    () => {
      const stored = reader
        .prepare<[], { endpoints: string }>("SELECT endpoints FROM registry_hosts WHERE host = 'a.internal'")
        .get();
      assert.match(stored?.endpoints ?? '', /10\.0\.0\.2/);
    },
    { timeoutMs: 5000, intervalMs: 5 },
  );
  // Seen within 5 ms of the save's commit: a row committed on its own would come with its window.
  assert.equal(count('SELECT COUNT(*) AS n FROM config_history'), 1, 'the row went with the save');
});
