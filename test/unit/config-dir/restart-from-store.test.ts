// A restart with a store (store/config-loads.ts, config-dir/stored-load.ts): a file whose text is
// the store's last accepted one is taken as it was stored, without a parse and without writing its
// history again; a file edited, broken or deleted while the server was down is read as any edit.
// With --store, a replica whose store is empty takes a file whose exact text another replica loaded
// (store/postgres/config-load-mirror.ts) without a parse, and nothing more: no version in force.
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { loadFormat } from '../../../config-dir/stored-load.js';
import { silentLogger } from '../../../log/logger.js';
import type { AcceptedFiles } from '../../../model/accepted-files.js';
import { SharedConfigLoadFiles } from '../../../store/postgres/config-load-mirror.js';
import { SqliteSharedStore } from '../../../store/sqlite-shared.js';
import { DB_FILE, Store } from '../../../store/store.js';
import { makeTempDir } from './helpers.js';

const se = (name: string, address: string): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: ${name} }
spec:
  hosts: [${name}.restart.internal]
  ports: [{ number: 80, name: http, protocol: HTTP }]
  resolution: STATIC
  endpoints: [{ address: ${address} }]
`;

interface Run {
  registry: ConfigDirRegistry;
  store: Store;
  logs: Record<string, unknown>[];
  stop(): Promise<void>;
}

/** One `serve`: the store in `dataDir`, the registry on `dir`, started. `accepted`: other than the store's. */
async function run(
  t: TestContext,
  dir: string,
  dataDir: string,
  accepted?: (store: Store) => Promise<AcceptedFiles>,
): Promise<Run> {
  const store = Store.open({ dataDir, logger: silentLogger });
  const logs: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const registry = new ConfigDirRegistry({
    dir,
    logger,
    history: store.history,
    accepted: accepted ? await accepted(store) : store.configLoads,
  });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await registry.stop();
    store.close();
  };
  t.after(stop);
  await registry.start();
  return { registry, store, logs, stop };
}

const addresses = (r: ConfigDirRegistry, name: string): string[] | undefined =>
  r
    .snapshot()
    .endpoints.get(`${name}.restart.internal`)
    ?.map((e) => e.address);

async function layout(t: TestContext): Promise<{ dir: string; dataDir: string }> {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  const dir = join(tmp.dir, 'config');
  const dataDir = join(tmp.dir, 'data');
  await mkdir(dataDir);
  await tmp.write('config/a.yaml', se('a', '10.0.0.1'));
  await tmp.write('config/b.yaml', se('b', '10.0.0.2'));
  await tmp.write('config/c.yaml', se('c', '10.0.0.3'));
  await tmp.write('config/d.yaml', se('d', '10.0.0.4'));
  return { dir, dataDir };
}

test('a restart takes the unchanged files as stored, and reads what changed while it was down', async (t) => {
  const { dir, dataDir } = await layout(t);
  const first = await run(t, dir, dataDir);
  await first.stop();

  // While down: a edited, b broken, c deleted, d untouched.
  await writeFile(join(dir, 'a.yaml'), se('a', '10.0.1.1'));
  await writeFile(join(dir, 'b.yaml'), `${se('b', '10.0.1.2')}  colour: blue\n`);
  await rm(join(dir, 'c.yaml'));

  const second = await run(t, dir, dataDir);
  const r = second.registry;
  assert.deepEqual(addresses(r, 'a'), ['10.0.1.1'], 'the edit made while down is in force');
  assert.deepEqual(addresses(r, 'b'), ['10.0.0.2'], 'the broken file keeps its last good version');
  assert.equal(addresses(r, 'c'), undefined, 'the deleted file is gone');
  assert.deepEqual(addresses(r, 'd'), ['10.0.0.4'], 'the unchanged file is in force');
  const status = Object.fromEntries(r.debugState().files.map((f) => [f.path, f.status]));
  assert.deepEqual(status, { 'a.yaml': 'ok', 'b.yaml': 'error', 'd.yaml': 'ok' });
  assert.ok(
    second.logs.some(
      (l) => l.msg === 'config file rejected; keeping its last good version' && l.file === 'b.yaml',
    ),
    'the broken file is reported',
  );
  const summary = second.logs.find((l) => l.msg === 'config directory loaded');
  assert.equal(summary?.files, 3);
  assert.equal(summary?.unchanged, 1, 'd.yaml only');
  assert.equal(summary?.withErrors, 1);
  assert.equal(
    second.logs.filter((l) => l.msg === 'config file loaded').length,
    0,
    'no line per file at start',
  );

  // The history records what changed while down, and nothing for d.yaml.
  const rows = second.store.history
    .recent(100)
    .filter((e) => e.source === 'config')
    .map((e) => `${e.subject} ${e.event}`);
  assert.deepEqual(rows.slice(0, 2).sort(), ['a.yaml accepted', 'b.yaml rejected']);
  assert.equal(rows.filter((row) => row === 'd.yaml accepted').length, 1, 'd.yaml: the first run only');
});

/** Rewrites the stored load of `path` (the store closed). */
function tamper(dataDir: string, path: string, set: { load?: string; format?: string; hash?: string }): void {
  const db = new Database(join(dataDir, DB_FILE));
  try {
    const row = db
      .prepare<[string], { load: string; format: string; content_hash: string }>(
        'SELECT load, format, content_hash FROM config_loads WHERE path = ?',
      )
      .get(path);
    assert.ok(row, `a stored load of ${path}`);
    db.prepare('UPDATE config_loads SET load = ?, format = ?, content_hash = ? WHERE path = ?').run(
      set.load ?? row.load,
      set.format ?? row.format,
      set.hash ?? row.content_hash,
      path,
    );
  } finally {
    db.close();
  }
}

/** d.yaml's stored load, made to say another address (what a stale load would serve). */
function otherLoad(dataDir: string): string {
  const db = new Database(join(dataDir, DB_FILE), { readonly: true });
  try {
    const row = db.prepare<[], { load: string }>("SELECT load FROM config_loads WHERE path = 'd.yaml'").get();
    assert.ok(row);
    return row.load.replaceAll('10.0.0.4', '10.9.9.9');
  } finally {
    db.close();
  }
}

test('the stored load is taken only for the text and the build it was made from', async (t) => {
  const { dir, dataDir } = await layout(t);
  await (await run(t, dir, dataDir)).stop();
  const other = otherLoad(dataDir);

  // The same text and build: the stored load is what is taken (no parse of d.yaml).
  tamper(dataDir, 'd.yaml', { load: other });
  let r = await run(t, dir, dataDir);
  assert.deepEqual(addresses(r.registry, 'd'), ['10.9.9.9'], 'taken as stored');
  await r.stop();

  // Made by another build (a validator changed): parsed again.
  tamper(dataDir, 'd.yaml', { load: other, format: 'another build' });
  r = await run(t, dir, dataDir);
  assert.deepEqual(addresses(r.registry, 'd'), ['10.0.0.4'], 'another build: parsed');
  await r.stop();

  // Of another text than the one accepted last (its write lost, say): parsed again.
  tamper(dataDir, 'd.yaml', { load: other, hash: 'not the accepted text' });
  r = await run(t, dir, dataDir);
  assert.deepEqual(addresses(r.registry, 'd'), ['10.0.0.4'], 'another text: parsed');
});

test('a replica with an empty store takes what another loaded of the exact same text, and no version in force', async (t) => {
  const { dir, dataDir } = await layout(t);
  await mkdir(join(dataDir, '..', 'shared'));
  const sharedStore = Store.open({ dataDir: join(dataDir, '..', 'shared'), logger: silentLogger });
  t.after(() => sharedStore.close());
  const shared = new SqliteSharedStore(sharedStore);
  let mirror: SharedConfigLoadFiles | undefined;
  const viaShared = async (store: Store): Promise<AcceptedFiles> =>
    (mirror = await SharedConfigLoadFiles.open(store.configLoads, shared, loadFormat(), silentLogger));

  // Replica A loads the directory; its loads reach the shared store.
  const first = await run(t, dir, dataDir, viaShared);
  await mirror?.flush();
  await first.stop();
  const rows = await shared.configLoads(loadFormat(), 100);
  assert.deepEqual([...rows.keys()], ['a.yaml', 'b.yaml', 'c.yaml', 'd.yaml']);
  // Made to say another address, so that taking a shared load shows (a parse would say 10.0.0.x).
  const tampered = (path: string, from: string) => {
    const row = rows.get(path);
    assert.ok(row);
    return { ...row, load: row.load.replaceAll(from, '10.9.9.9') };
  };
  await shared.writeConfigLoads(
    [tampered('b.yaml', '10.0.0.2'), tampered('c.yaml', '10.0.0.3'), tampered('d.yaml', '10.0.0.4')],
    [],
  );

  // While B was not running yet: b edited, c broken.
  await writeFile(join(dir, 'b.yaml'), se('b', '10.0.1.2'));
  await writeFile(join(dir, 'c.yaml'), `${se('c', '10.0.0.3')}  colour: blue\n`);

  const emptyDataDir = join(dataDir, '..', 'data-b');
  await mkdir(emptyDataDir);
  const second = await run(t, dir, emptyDataDir, viaShared);
  const r = second.registry;
  assert.deepEqual(addresses(r, 'a'), ['10.0.0.1'], 'the same text: its shared load');
  assert.deepEqual(addresses(r, 'd'), ['10.9.9.9'], 'the same text: taken as shared, without a parse');
  assert.deepEqual(addresses(r, 'b'), ['10.0.1.2'], 'another text: parsed');
  assert.equal(addresses(r, 'c'), undefined, 'broken: a shared load is no version in force');
  const status = Object.fromEntries(r.debugState().files.map((f) => [f.path, f.status]));
  assert.deepEqual(status, { 'a.yaml': 'ok', 'b.yaml': 'ok', 'c.yaml': 'error', 'd.yaml': 'ok' });
  const summary = second.logs.find((l) => l.msg === 'config directory loaded');
  assert.equal(summary?.unchanged, 0, "none is this replica's accepted version yet");
  const accepted = second.store.history
    .recent(100)
    .filter((e) => e.source === 'config' && e.event === 'accepted')
    .map((e) => e.subject)
    .sort();
  assert.deepEqual(
    accepted,
    ['a.yaml', 'b.yaml', 'd.yaml'],
    "this replica's first accept of each is recorded",
  );
  await second.stop();

  // B again, without the shared store: what it took is its own now.
  const third = await run(t, dir, emptyDataDir);
  assert.deepEqual(addresses(third.registry, 'd'), ['10.9.9.9'], 'kept in its own store');
  assert.equal(third.logs.find((l) => l.msg === 'config directory loaded')?.unchanged, 3);
});
