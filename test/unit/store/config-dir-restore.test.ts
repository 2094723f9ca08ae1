// The config directory's stored snapshot (store/registry-persistence.ts, DeferredRestore): its start
// reads and publishes every file before anything is served, so the snapshot is not restored before
// it — only when that start fails before its first publish, which then serves the stored one.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { silentLogger } from '../../../log/logger.js';
import { RegistryPersistence } from '../../../store/registry-persistence.js';
import { Store } from '../../../store/store.js';
import { eventually } from '../../support/eventually.js';

const SE = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: kept }
spec:
  hosts: [kept.restore.internal]
  ports: [{ number: 80, name: http, protocol: HTTP }]
  resolution: STATIC
  endpoints: [{ address: 10.2.0.1 }]
`;

test('the config directory is restored from the store only when its start fails', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'portolan-restore-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dir = join(root, 'config');
  mkdirSync(dir);
  mkdirSync(join(root, 'data'));
  writeFileSync(join(dir, 'kept.yaml'), SE);
  const store = Store.open({ dataDir: join(root, 'data'), logger: silentLogger });
  t.after(() => store.close());

  const first = new ConfigDirRegistry({ dir, history: store.history });
  const saving = new RegistryPersistence(store, [first], silentLogger, { debounceMs: 10 });
  saving.watch();
  assert.deepEqual(saving.restore(), []);
  await first.start();
  await eventually(
    () => assert.ok(store.snapshots.load('config')?.snapshot.services.has('kept.restore.internal')),
    {
      what: 'the snapshot saved',
    },
  );
  saving.stop();
  await first.stop();

  // A start that succeeds: nothing restored before it, the files are what is served.
  const second = new ConfigDirRegistry({ dir, history: store.history });
  const again = new RegistryPersistence(store, [second], silentLogger, { debounceMs: 10 });
  assert.deepEqual(again.restore(), [], 'deferred to the start');
  assert.equal(second.hasSynced(), false, 'nothing restored before the start');
  await second.start();
  assert.equal(second.status().restoredFrom, undefined);
  assert.ok(second.snapshot().services.has('kept.restore.internal'));
  again.stop();
  await second.stop();

  // A start that fails before its first publish (the directory gone): the stored snapshot is served.
  rmSync(dir, { recursive: true, force: true });
  const third = new ConfigDirRegistry({ dir, history: store.history });
  const last = new RegistryPersistence(store, [third], silentLogger, { debounceMs: 10 });
  t.after(() => last.stop());
  last.restore();
  await assert.rejects(third.start());
  assert.ok(third.status().restoredFrom, 'serving the stored snapshot');
  assert.ok(third.snapshot().services.has('kept.restore.internal'));
});
