// `portolan serve --registries zookeeper` as a child process: the --zk-* flags, /ready, and the
// registry's state in /debug/registryz and /metrics, including while ZooKeeper is down.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess } from '../support/portolan-process.js';
import { curatorInstanceJson, ZkTestClient } from '../support/zookeeper-client.js';
import { startZooKeeperServer, type ZooKeeperServer } from '../support/zookeeper-server.js';

let zk: ZooKeeperServer;
let dir: string;

before(async () => {
  zk = await startZooKeeperServer();
  dir = mkdtempSync(join(tmpdir(), 'portolan-zk-serve-'));
  const writer = await ZkTestClient.connect(zk.connectString);
  await writer.put(
    '/apps/catalog/c1',
    curatorInstanceJson({ name: 'catalog', id: 'c1', address: '127.0.0.9', port: 8080 }),
  );
  await writer.close();
});

after(async () => {
  await zk.destroy();
  rmSync(dir, { recursive: true, force: true });
});

interface RegistryzView {
  registries: {
    name: string;
    status: { synced: boolean; stale: boolean; lastError?: string };
    debug?: { connection: string; layouts: { name: string; root: string }[] };
    services: { hostname: string; endpoints: unknown[] }[];
  }[];
}

test('portolan serve reads ZooKeeper with the --zk-* flags and reports it in registryz and metrics', async () => {
  const portolan = await startPortolanProcess([
    '--registries',
    'zookeeper',
    '--zk-hosts',
    zk.connectString,
    '--zk-session-timeout',
    '3s',
    '--zk-layouts',
    'curator',
    '--zk-curator-base',
    '/apps',
    '--zk-curator-suffix',
    'apps.internal',
    '--data-dir',
    join(dir, 'data'),
  ]);
  try {
    assert.equal((await fetch(`${portolan.httpBase}/ready`)).status, 200);
    const view = (await (await fetch(`${portolan.httpBase}/debug/registryz`)).json()) as RegistryzView;
    const zkView = view.registries.find((r) => r.name === 'zookeeper');
    assert.equal(zkView?.status.synced, true);
    assert.equal(zkView?.debug?.connection, 'connected');
    assert.deepEqual(
      zkView?.debug?.layouts.map((l) => `${l.name}:${l.root}`),
      ['curator:/apps'],
    );
    assert.deepEqual(
      zkView?.services.map((s) => `${s.hostname}:${s.endpoints.length}`),
      ['catalog.apps.internal:1'],
    );

    // ZooKeeper goes away: still ready (the last good state is served), but stale, and it says so.
    await zk.stop();
    try {
      await eventually(async () => {
        const metrics = await (await fetch(`${portolan.httpBase}/metrics`)).text();
        assert.match(metrics, /portolan_registry_stale\{registry="zookeeper"\} 1/);
      });
      const down = (await (await fetch(`${portolan.httpBase}/debug/registryz`)).json()) as RegistryzView;
      const zkDown = down.registries.find((r) => r.name === 'zookeeper');
      assert.equal(zkDown?.status.stale, true);
      assert.match(zkDown?.status.lastError ?? '', /disconnected from ZooKeeper/);
      assert.deepEqual(
        zkDown?.services.map((s) => s.hostname),
        ['catalog.apps.internal'],
      );
      assert.equal((await fetch(`${portolan.httpBase}/ready`)).status, 200);
    } finally {
      await zk.start();
    }
  } finally {
    const exit = await portolan.stop();
    assert.equal(exit.code, 0, 'clean exit on SIGTERM');
  }
});

test('a bad --zk-* flag stops portolan serve before it connects, naming the flag', async () => {
  await assert.rejects(
    startPortolanProcess([
      '--registries',
      'zookeeper',
      '--zk-hosts',
      zk.connectString,
      '--zk-layouts',
      'curator,eureka',
      '--data-dir',
      join(dir, 'data'),
    ]),
    // Exit code 2 (a usage error); the log lines are JSON-quoted in the message.
    /exited with 2 before serving: .*--zk-layouts: unknown layout \\"eureka\\"/,
  );
});
