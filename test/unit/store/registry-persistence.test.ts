// RegistryPersistence saves what a registry changes (one row per hostname, store migration 6):
// after each change the stored snapshot must equal the registry's, for a changed, an added and a
// removed host, and across a restart of the persistence (whose first save rewrites every host).
// Real SQLite files, the real mock registry.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { MockRegistry } from '../../../adapters/mock/registry.js';
import { silentLogger } from '../../../log/logger.js';
import type { RegistrySnapshot } from '../../../model/change.js';
import { RegistryPersistence } from '../../../store/registry-persistence.js';
import { Store } from '../../../store/store.js';
import { eventually } from '../../support/eventually.js';
import { endpoint, mockService, servicePort } from '../../support/model-fixtures.js';

const plain = (s: RegistrySnapshot | undefined): unknown =>
  s && {
    services: [...s.services].sort(([a], [b]) => a.localeCompare(b)),
    endpoints: [...s.endpoints].sort(([a], [b]) => a.localeCompare(b)),
  };

test('each change is saved: a changed, an added and a removed host; a restart rewrites every host', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-persist-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  t.after(() => store.close());
  const registry = new MockRegistry();
  const port = [servicePort('grpc', 7070)];
  for (const host of ['a.internal', 'b.internal', 'c.internal']) {
    registry.putService(mockService(host, port));
    registry.setEndpoints(host, [endpoint('10.0.0.1', { grpc: 7070 })]);
  }
  let persistence = new RegistryPersistence(store, [registry], silentLogger, { debounceMs: 10 });
  persistence.watch();
  await registry.start();
  const stored = (): unknown => plain(store.snapshots.load('mock')?.snapshot);
  const savedAsServed = (what: string): Promise<unknown> =>
    eventually(() => assert.deepEqual(stored(), plain(registry.snapshot())), { what });

  await savedAsServed('the first save');
  registry.setEndpoints('a.internal', [endpoint('10.0.0.2', { grpc: 7070 })]);
  await savedAsServed('a changed host saved');
  registry.putService(mockService('d.internal', port));
  await savedAsServed('an added host saved');
  assert.equal(registry.deleteService('b.internal'), true);
  await savedAsServed('a removed host saved');

  // A new persistence (a restart) over rows it did not write: its first save rewrites them all.
  persistence.stop();
  store.snapshots.saveHosts(
    'mock',
    { services: new Map(), endpoints: new Map([['stale', []]]) },
    ['stale'],
    'x',
  );
  persistence = new RegistryPersistence(store, [registry], silentLogger, { debounceMs: 10 });
  persistence.watch();
  t.after(() => persistence.stop());
  registry.setEndpoints('c.internal', [endpoint('10.0.0.3', { grpc: 7070 })]);
  await savedAsServed('the first save after a restart, without the stale row');
});
