// A restart with a store (store/config-loads.ts, config-dir/stored-load.ts): a file whose text is
// the store's last accepted one is taken as it was stored, without a parse and without writing its
// history again; a file edited, broken or deleted while the server was down is read as any edit.
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { silentLogger } from '../../../log/logger.js';
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

/** One `serve`: the store in `dataDir`, the registry on `dir`, started. */
async function run(t: TestContext, dir: string, dataDir: string): Promise<Run> {
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
    accepted: store.configLoads,
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
