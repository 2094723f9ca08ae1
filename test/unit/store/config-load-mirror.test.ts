// The config loads written behind to the shared store (store/postgres/config-load-mirror.ts), over a
// fake SharedConfigLoads: what this replica records and removes reaches it in one write, the newest
// per path; a row it already holds is not written again; a failed write is retried, and what waits
// is bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../log/logger.js';
import type { AcceptedFile, AcceptedFiles } from '../../../model/accepted-files.js';
import { contentHash } from '../../../store/config-loads.js';
import { MAX_KEPT, SharedConfigLoadFiles } from '../../../store/postgres/config-load-mirror.js';
import type { SharedConfigLoad, SharedConfigLoads } from '../../../store/shared-store.js';

class Local implements AcceptedFiles {
  readonly recorded: string[] = [];
  all(): ReadonlyMap<string, AcceptedFile> {
    return new Map();
  }
  recordLoad(path: string, text: string): void {
    this.recorded.push(`${path}:${text}`);
  }
  removeLoad(path: string): void {
    this.recorded.push(`-${path}`);
  }
}

class Shared implements SharedConfigLoads {
  readonly writes: { rows: string[]; removed: string[] }[] = [];
  rows = new Map<string, SharedConfigLoad>();
  failing = false;
  async configLoads(format: string): Promise<Map<string, SharedConfigLoad>> {
    return new Map([...this.rows].filter(([, r]) => r.format === format));
  }
  async writeConfigLoads(rows: readonly SharedConfigLoad[], removed: readonly string[]): Promise<void> {
    if (this.failing) throw new Error('connection refused');
    this.writes.push({ rows: rows.map((r) => `${r.path}:${r.load}`), removed: [...removed] });
    for (const r of rows) this.rows.set(r.path, r);
    for (const p of removed) this.rows.delete(p);
  }
}

const row = (path: string, text: string, load = `load of ${text}`): SharedConfigLoad => ({
  path,
  contentHash: contentHash(text),
  format: 'f1',
  load,
});

test('records and removals reach the shared store in one write, newest per path; held rows are not rewritten', async () => {
  const shared = new Shared();
  shared.rows.set('held.yaml', row('held.yaml', 'H'));
  const local = new Local();
  const files = await SharedConfigLoadFiles.open(local, shared, 'f1', silentLogger);
  files.recordLoad('a.yaml', 'A1', 'f1', 'load A1');
  files.recordLoad('a.yaml', 'A2', 'f1', 'load A2');
  files.recordLoad('held.yaml', 'H', 'f1', 'load of H');
  files.recordLoad('gone.yaml', 'G', 'f1', 'load G');
  files.removeLoad('gone.yaml');
  await files.flush();
  assert.deepEqual(shared.writes, [{ rows: ['a.yaml:load A2'], removed: ['gone.yaml'] }]);
  assert.deepEqual(local.recorded, ['a.yaml:A1', 'a.yaml:A2', 'held.yaml:H', 'gone.yaml:G', '-gone.yaml']);

  // A shared load is taken for its exact text and build only, and kept locally.
  assert.equal(files.loadOf('held.yaml', 'H', 'f1'), 'load of H');
  assert.equal(files.loadOf('held.yaml', 'H changed', 'f1'), undefined);
  assert.equal(files.loadOf('held.yaml', 'H', 'f2'), undefined);
  assert.equal(local.recorded.at(-1), 'held.yaml:H');
  files.started();
  assert.equal(files.loadOf('held.yaml', 'H', 'f1'), undefined, 'dropped after the start');
  files.stop();
});

test('a failed write is retried with what came meanwhile; what waits is bounded', async () => {
  const shared = new Shared();
  shared.failing = true;
  const files = await SharedConfigLoadFiles.open(new Local(), shared, 'f1', silentLogger);
  files.recordLoad('a.yaml', 'A1', 'f1', 'load A1');
  await files.flush();
  assert.equal(shared.writes.length, 0);
  files.recordLoad('b.yaml', 'B1', 'f1', 'load B1');
  for (let i = 0; i < MAX_KEPT; i++) files.recordLoad(`many-${i}.yaml`, `T${i}`, 'f1', 'x');
  assert.equal(files.dropped, 2, 'the oldest beyond the bound');
  shared.failing = false;
  await files.flush();
  const written = shared.writes.flatMap((w) => w.rows);
  assert.equal(written.length, MAX_KEPT);
  assert.ok(!written.includes('a.yaml:load A1') && written.includes(`many-${MAX_KEPT - 1}.yaml:x`));
  files.stop();
});

test('a shared store that does not answer at start: nothing shared, files are parsed', async () => {
  const shared = new Shared();
  shared.configLoads = async () => {
    throw new Error('timeout');
  };
  const files = await SharedConfigLoadFiles.open(new Local(), shared, 'f1', silentLogger);
  assert.equal(files.loadOf('a.yaml', 'A', 'f1'), undefined);
  files.stop();
});
