// The history shared through PostgreSQL (issue #20, docs/ha.md), on a real PostgreSQL: two replicas
// record config changes and registry events (each in its own SQLite --data-dir); their rows, tagged
// with their replica ids, are written behind to the database, and `portolan history --store` shows
// both. Rows recorded while the database is down wait and are written when it returns.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { silentLogger } from '../../log/logger.js';
import type { HistoryEntry } from '../../store/history.js';
import { PostgresHistoryMirror } from '../../store/postgres/history-mirror.js';
import { PostgresStore } from '../../store/postgres/postgres-store.js';
import { Store } from '../../store/store.js';
import { eventually } from '../support/eventually.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
let postgres: PostgresServer;
const dirs: string[] = [];
before(async () => {
  postgres = await startPostgres();
});
after(async () => {
  await postgres.destroy();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function replica(url: string, name: string) {
  const dir = mkdtempSync(join(tmpdir(), `portolan-pghist-${name}-`));
  dirs.push(dir);
  const local = Store.open({ dataDir: dir, logger: silentLogger, replica: name });
  const shared = await PostgresStore.open({ url, replica: name, timeoutMs: 1000 });
  const mirror = new PostgresHistoryMirror(shared, 1000, silentLogger);
  local.history.mirrorTo(mirror);
  return {
    dir,
    local,
    mirror,
    async close() {
      await mirror.flush();
      mirror.stop();
      local.close();
      await shared.close();
    },
  };
}

async function sharedHistory(url: string, dataDir: string): Promise<HistoryEntry[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [MAIN, 'history', '--store', url, '--data-dir', dataDir, '--json'],
    { timeout: 30_000 },
  );
  return (JSON.parse(stdout) as { changes: HistoryEntry[] }).changes;
}

test('portolan history --store shows both replicas rows, tagged with their replica ids', async () => {
  const url = await postgres.createDatabase('history_two');
  const a = await replica(url, 'replica-a');
  const b = await replica(url, 'replica-b');
  try {
    a.local.history.recordConfig('payments.yaml', 'accepted', {
      text: 'x',
      resources: ['VirtualService/p'],
      generation: 7,
    });
    b.local.history.recordRegistry('remote', 'failed', 'connection refused');
    await eventually(async () => {
      const rows = await sharedHistory(url, a.dir);
      assert.deepEqual(
        rows.map((r) => `${r.replica} ${r.source} ${r.subject} ${r.event} ${r.generation ?? '-'}`).sort(),
        ['replica-a config payments.yaml accepted 7', 'replica-b registry remote failed -'],
      );
    });
  } finally {
    await a.close();
    await b.close();
  }
});

test('rows recorded while PostgreSQL is down are written when it returns', async () => {
  const url = await postgres.createDatabase('history_outage');
  const a = await replica(url, 'replica-a');
  try {
    await postgres.stop();
    a.local.history.recordRegistry('remote', 'synced', 'during the outage');
    await a.mirror.flush();
    assert.equal(a.local.history.recent(10)[0]?.detail, 'during the outage', 'kept locally as ever');
    await postgres.start();
    await eventually(
      async () => {
        await a.mirror.flush();
        const rows = await sharedHistory(url, a.dir);
        assert.deepEqual(
          rows.map((r) => `${r.replica} ${r.detail}`),
          ['replica-a during the outage'],
        );
      },
      { timeoutMs: 30_000 },
    );
    assert.equal(a.mirror.dropped, 0);
  } finally {
    await a.close();
  }
});
