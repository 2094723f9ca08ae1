// Warm start: a restart while a registry's source is down serves the persisted endpoints to the
// real grpc-js-xds client at once, and follows the source when it comes back. Each test has its own
// data directory and persists what it restarts from.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { silentLogger } from '../../log/logger.js';
import type { RegistrySnapshot } from '../../model/change.js';
import { Store } from '../../store/store.js';
import { callEcho, startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane } from '../support/in-process.js';
import { endpoint, service, servicePort } from '../support/model-fixtures.js';
import { SwitchableRegistry } from '../support/switchable-registry.js';
import { xdsEchoClient } from '../support/xds-client.js';

const HOST = 'echo.warm.internal';
const backends: EchoBackend[] = [];

function pointingAt(b: EchoBackend): RegistrySnapshot {
  return {
    services: new Map([[HOST, service(HOST, [servicePort('grpc', 7070)], { registry: 'remote' })]]),
    endpoints: new Map([[HOST, [endpoint(b.address, { grpc: b.port })]]]),
  };
}

/** A data directory of the test's own, removed after it. */
function dataDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-warm-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A first run with the source up, stopped once its state is persisted in `dir`. */
async function persistedRun(dir: string, backend: EchoBackend): Promise<void> {
  const first = await run(dir, new SwitchableRegistry('remote', pointingAt(backend)), true);
  try {
    await eventually(() => assert.ok(first.store.snapshots.load('remote')));
  } finally {
    await first.stop();
  }
}

/** One run of the control plane: store → (restore) → registry → aggregate → ADS on loopback. */
async function run(dir: string, registry: SwitchableRegistry, serveStale: boolean) {
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  const plane = await startInProcessPlane({
    pushWindowMs: 10,
    extraRegistries: [registry],
    persistence: { store, serveStale, debounceMs: 20 },
  });
  return {
    restored: plane.restored,
    store,
    discovery: plane.discovery,
    address: plane.address,
    async stop() {
      await plane.stop();
      store.close();
    },
  };
}

before(async () => {
  const first = await startEchoBackend('w1', '127.0.0.1');
  backends.push(first, await startEchoBackend('w2', '127.0.0.2', first.port));
});

after(async () => {
  await Promise.all(backends.map((b) => b.stop()));
});

test('a restart with the source down serves the stored endpoints, then follows the source', async (t) => {
  const [w1, w2] = backends as [EchoBackend, EchoBackend];
  const dir = dataDir(t);
  // First run: the source is up and its state is persisted.
  await persistedRun(dir, w1);

  // Second run: the source is down at start.
  const registry = new SwitchableRegistry('remote', undefined);
  const second = await run(dir, registry, true);
  const client = xdsEchoClient(`xds:///${HOST}:7070`, second.address, 'warm-client');
  try {
    assert.deepEqual(second.restored, ['remote']);
    assert.equal(second.discovery.hasSynced(), true, 'served at once');
    const status = registry.status();
    assert.equal(status.stale, true);
    assert.ok(status.restoredFrom, 'status names where the state came from');
    assert.equal(await eventually(() => callEcho(client)), 'w1');

    // The source comes back with a new endpoint: the client follows, the store is updated.
    registry.setSource(pointingAt(w2));
    await eventually(async () => assert.equal(await callEcho(client), 'w2'));
    assert.equal(registry.status().stale, false);
    await eventually(() =>
      assert.equal(
        second.store.snapshots.load('remote')?.snapshot.endpoints.get(HOST)?.[0]?.address,
        w2.address,
      ),
    );
    const events = second.store.history.recent(20).map((e) => `${e.subject} ${e.event}`);
    assert.ok(events.includes('remote restored') && events.includes('remote synced'), events.join(', '));
  } finally {
    client.close();
    await second.stop();
  }
});

test('with serving stale turned off, nothing is served until the source syncs', async (t) => {
  const [w1] = backends as [EchoBackend, EchoBackend];
  const dir = dataDir(t);
  await persistedRun(dir, w1);

  const registry = new SwitchableRegistry('remote', undefined);
  const third = await run(dir, registry, false);
  try {
    assert.ok(third.store.snapshots.load('remote'), 'a stored state is there to restore');
    assert.deepEqual(third.restored, []);
    assert.equal(third.discovery.hasSynced(), false, 'streams are refused until the first live sync');
    registry.setSource(pointingAt(backends[0] as EchoBackend));
    assert.equal(third.discovery.hasSynced(), true);
  } finally {
    await third.stop();
  }
});
