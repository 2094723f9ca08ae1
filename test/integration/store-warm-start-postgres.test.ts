// Last-good registry snapshots shared through PostgreSQL (issue #20, docs/ha.md), on a real
// PostgreSQL: replica A's saves reach the shared registry_hosts rows; a fresh replica B (its own
// empty --data-dir) whose source is down warm-starts from them; a database outage loses nothing, and
// the first write after it carries every change made meanwhile.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { silentLogger } from '../../log/logger.js';
import type { RegistrySnapshot } from '../../model/change.js';
import { PostgresStore } from '../../store/postgres/postgres-store.js';
import { PostgresSnapshotMirror, pullSharedSnapshots } from '../../store/postgres/snapshot-mirror.js';
import { decodeHosts } from '../../store/snapshot-codec.js';
import { RegistryPersistence } from '../../store/registry-persistence.js';
import { Store } from '../../store/store.js';
import { eventually } from '../support/eventually.js';
import { endpoint, service, servicePort } from '../support/model-fixtures.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { SwitchableRegistry } from '../support/switchable-registry.js';

let postgres: PostgresServer;
const dirs: string[] = [];
before(async () => {
  postgres = await startPostgres();
});
after(async () => {
  await postgres.destroy();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function snapshotWith(addresses: readonly string[]): RegistrySnapshot {
  const host = 'payments.remote';
  return {
    services: new Map([[host, service(host, [servicePort('grpc', 50051)])]]),
    endpoints: new Map([[host, addresses.map((a) => endpoint(a, { grpc: 50051 }))]]),
  };
}

/** One replica's persistence: its own SQLite in a fresh data dir, the mirror to the shared store. */
async function replica(url: string, name: string, registry: SwitchableRegistry) {
  const dir = mkdtempSync(join(tmpdir(), `portolan-pgwarm-${name}-`));
  dirs.push(dir);
  const local = Store.open({ dataDir: dir, logger: silentLogger });
  const shared = await PostgresStore.open({ url, replica: name, timeoutMs: 1000 });
  const mirror = new PostgresSnapshotMirror(shared, silentLogger);
  const persistence = new RegistryPersistence(local, [registry], silentLogger, { debounceMs: 10, mirror });
  return {
    local,
    shared,
    mirror,
    persistence,
    async close() {
      persistence.stop();
      mirror.stop();
      local.close();
      await shared.close();
    },
  };
}

function addressesOf(snapshot: RegistrySnapshot): string[] {
  return (snapshot.endpoints.get('payments.remote') ?? []).map((e) => e.address).sort();
}

test('a fresh replica warm-starts from the snapshot another replica saved in PostgreSQL', async () => {
  const url = await postgres.createDatabase('warm_shared');
  const sourceA = new SwitchableRegistry('remote', snapshotWith(['10.0.0.1', '10.0.0.2']));
  const a = await replica(url, 'replica-a', sourceA);
  try {
    a.persistence.watch();
    await sourceA.start();
    await eventually(async () => {
      const stored = await a.shared.loadRegistrySnapshots();
      assert.deepEqual(
        addressesOf(pullRows(stored, 'remote')),
        ['10.0.0.1', '10.0.0.2'],
        'A mirrored its snapshot',
      );
    });
    // An edit after the first (full) save is written as the changed hostname only.
    sourceA.setSource(snapshotWith(['10.0.0.3']));
    await eventually(async () => {
      assert.deepEqual(addressesOf(pullRows(await a.shared.loadRegistrySnapshots(), 'remote')), ['10.0.0.3']);
    });
  } finally {
    await a.close();
  }

  // B: an empty data dir, its source down from the start.
  const sourceB = new SwitchableRegistry('remote', undefined);
  const b = await replica(url, 'replica-b', sourceB);
  try {
    assert.equal(b.local.snapshots.load('remote'), undefined, 'B has nothing of its own');
    assert.deepEqual(await pullSharedSnapshots(b.shared, b.local.snapshots, silentLogger), ['remote']);
    b.persistence.watch();
    assert.deepEqual(b.persistence.restore(), ['remote']);
    await sourceB.start();
    assert.ok(sourceB.status().restoredFrom, 'B serves a restored snapshot, its source being down');
    assert.deepEqual(addressesOf(sourceB.snapshot()), ['10.0.0.3'], "B serves A's last good endpoints");
  } finally {
    await b.close();
  }
});

test('a PostgreSQL outage keeps the changes pending; the next write carries them all', async () => {
  const url = await postgres.createDatabase('warm_outage');
  const source = new SwitchableRegistry('remote', snapshotWith(['10.1.0.1']));
  const a = await replica(url, 'replica-a', source);
  try {
    a.persistence.watch();
    await source.start();
    await eventually(async () => {
      assert.deepEqual(addressesOf(pullRows(await a.shared.loadRegistrySnapshots(), 'remote')), ['10.1.0.1']);
    });
    await postgres.stop();
    source.setSource(snapshotWith(['10.1.0.2', '10.1.0.3']));
    // The local snapshot (and memory) move on while the database is down.
    await eventually(() => {
      assert.deepEqual(addressesOf(a.local.snapshots.load('remote')?.snapshot ?? snapshotWith([])), [
        '10.1.0.2',
        '10.1.0.3',
      ]);
    });
    await a.mirror.flush();
    await postgres.start();
    await eventually(
      async () => {
        await a.mirror.flush();
        assert.deepEqual(addressesOf(pullRows(await a.shared.loadRegistrySnapshots(), 'remote')), [
          '10.1.0.2',
          '10.1.0.3',
        ]);
      },
      { timeoutMs: 30_000 },
    );
  } finally {
    await a.close();
  }
});

function pullRows(
  stored: Awaited<ReturnType<PostgresStore['loadRegistrySnapshots']>>,
  registry: string,
): RegistrySnapshot {
  const head = stored.find((s) => s.registry === registry);
  assert.ok(head, `${registry} is stored`);
  return decodeHosts(head.rows);
}

/** A registry whose restore waits on its own start (as the config directory's: DeferredRestore). */
class DeferringRegistry extends SwitchableRegistry {
  pendingRestore: (() => void) | undefined;
  restoreUnlessStarted(restore: () => void): void {
    this.pendingRestore = restore;
  }
}

test('a registry whose restore waits on its start takes the shared snapshot only if it is restored', async () => {
  const url = await postgres.createDatabase('warm_deferred');
  const sourceA = new SwitchableRegistry('remote', snapshotWith(['10.2.0.1']));
  const a = await replica(url, 'replica-a', sourceA);
  try {
    a.persistence.watch();
    await sourceA.start();
    await eventually(async () => {
      assert.deepEqual(addressesOf(pullRows(await a.shared.loadRegistrySnapshots(), 'remote')), ['10.2.0.1']);
    });
  } finally {
    await a.close();
  }

  const sourceB = new DeferringRegistry('remote', undefined);
  const b = await replica(url, 'replica-b', sourceB);
  try {
    const later = new Map([['remote', () => {}]]);
    assert.deepEqual(await pullSharedSnapshots(b.shared, b.local.snapshots, silentLogger, later), []);
    assert.equal(b.local.snapshots.load('remote'), undefined, 'not copied before it is needed');
    assert.deepEqual(b.persistence.restore(later), []);
    assert.ok(sourceB.pendingRestore, 'handed to the registry, for a start that fails');
    // Its start failed before a first publish: the restore runs, the shared copy first.
    sourceB.pendingRestore();
    assert.deepEqual(addressesOf(b.local.snapshots.load('remote')?.snapshot ?? snapshotWith([])), [
      '10.2.0.1',
    ]);
    assert.ok(sourceB.status().restoredFrom, 'serving the shared snapshot');
    assert.deepEqual(addressesOf(sourceB.snapshot()), ['10.2.0.1']);
  } finally {
    await b.close();
  }
});
