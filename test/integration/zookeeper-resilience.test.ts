// The zookeeper registry when ZooKeeper fails: a server restart, an expired session, a server that is
// unreachable at start, and reads that fail. Throughout, the last good state stays published (marked
// stale) until a full resync replaces it. The restart test stops its own server; the others share
// one, each under its own paths.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import zookeeper from 'node-zookeeper-client';
import type { ZooKeeperRegistry } from '../../adapters/zookeeper/registry.js';
import { eventually } from '../support/eventually.js';
import { curatorInstanceJson, ZkTestClient } from '../support/zookeeper-client.js';
import { endpointAddresses, startZkRegistry, zkDebug } from '../support/zookeeper-fixtures.js';
import { startZooKeeperProxy, type ZooKeeperProxy } from '../support/zookeeper-proxy.js';
import { startZooKeeperServer, type ZooKeeperServer } from '../support/zookeeper-server.js';

let zk: ZooKeeperServer;
let writer: ZkTestClient;
const registries: ZooKeeperRegistry[] = [];
const proxies: ZooKeeperProxy[] = [];

before(async () => {
  zk = await startZooKeeperServer();
  writer = await ZkTestClient.connect(zk.connectString);
});

after(async () => {
  await Promise.all(registries.map((r) => r.stop()));
  await Promise.all(proxies.map((p) => p.close()));
  await writer.close();
  await zk.destroy();
});

function instance(name: string, id: string, address: string, port = 8080): string {
  return curatorInstanceJson({ name, id, address, port });
}

test('server restart: the last good state stays, marked stale, then a resync follows changes again', async (t) => {
  // Undone last first: the registry, the writer, then the server.
  const cleanup: (() => Promise<void>)[] = [];
  t.after(async () => {
    for (const step of cleanup.reverse()) await step();
  });
  const own = await startZooKeeperServer();
  cleanup.push(() => own.destroy());
  let ownWriter: ZkTestClient | undefined = await ZkTestClient.connect(own.connectString);
  cleanup.push(async () => ownWriter?.close());
  await ownWriter.put('/restart/services/web/w1', instance('web', 'w1', '10.1.0.1'));
  const { registry, logs } = await startZkRegistry(own.connectString, { curatorBase: '/restart/services' });
  cleanup.push(() => registry.stop());
  assert.deepEqual(endpointAddresses(registry, 'web.service.zk'), ['10.1.0.1:8080']);
  const resyncsBefore = zkDebug(registry).resyncs;

  // The writer leaves first: its own client would try to reconnect while the server starts.
  await ownWriter.close();
  ownWriter = undefined;
  await own.stop();
  await eventually(() => assert.equal(registry.status().stale, true));
  assert.match(registry.status().lastError ?? '', /disconnected from ZooKeeper/);
  assert.ok(registry.hasSynced());
  assert.deepEqual(endpointAddresses(registry, 'web.service.zk'), ['10.1.0.1:8080'], 'last good state kept');
  assert.notEqual(zkDebug(registry).connection, 'connected');

  await own.start();
  await eventually(() => assert.equal(registry.status().stale, false), { timeoutMs: 15_000 });
  assert.ok(zkDebug(registry).resyncs > resyncsBefore, 'reconnecting resyncs');
  assert.ok(logs.some((l) => l.msg === 'disconnected from ZooKeeper; serving the last good state'));

  // The watches work again after the resync.
  ownWriter = await ZkTestClient.connect(own.connectString);
  await ownWriter.put('/restart/services/web/w2', instance('web', 'w2', '10.1.0.2'));
  await eventually(() =>
    assert.deepEqual(endpointAddresses(registry, 'web.service.zk'), ['10.1.0.1:8080', '10.1.0.2:8080']),
  );
});

test('session expiry: the registry opens a new session and resyncs, picking up what changed meanwhile', async () => {
  await writer.put('/expiry/services/api/a1', instance('api', 'a1', '10.2.0.1'));
  await writer.put('/expiry/services/api/a2', instance('api', 'a2', '10.2.0.2'));
  const proxy = await startZooKeeperProxy(zk.port);
  proxies.push(proxy);
  // The smallest timeout this server grants is 2 ticks (400 ms); ask for 1 s.
  const { registry, logs } = await startZkRegistry(proxy.connectString, {
    curatorBase: '/expiry/services',
    sessionTimeoutMs: 1000,
  });
  registries.push(registry);
  assert.deepEqual(endpointAddresses(registry, 'api.service.zk'), ['10.2.0.1:8080', '10.2.0.2:8080']);

  // Cut the registry off for well over its session timeout; the server, still up, expires the session.
  proxy.cut();
  await eventually(() => assert.equal(registry.status().stale, true));
  await writer.remove('/expiry/services/api/a1');
  await writer.put('/expiry/services/api/a3', instance('api', 'a3', '10.2.0.3'));
  await sleep(2500);
  assert.deepEqual(
    endpointAddresses(registry, 'api.service.zk'),
    ['10.2.0.1:8080', '10.2.0.2:8080'],
    'last good state while cut off',
  );

  proxy.restore();
  await eventually(
    () => {
      assert.equal(registry.status().stale, false);
      assert.deepEqual(endpointAddresses(registry, 'api.service.zk'), ['10.2.0.2:8080', '10.2.0.3:8080']);
    },
    { timeoutMs: 15_000 },
  );
  assert.equal(zkDebug(registry).sessions, 2, 'a new session replaced the expired one');
  assert.ok(logs.some((l) => l.msg === 'ZooKeeper session expired; opening a new session'));

  // The new session's watches are live.
  await writer.remove('/expiry/services/api/a2');
  await eventually(() => assert.deepEqual(endpointAddresses(registry, 'api.service.zk'), ['10.2.0.3:8080']));
});

test('a server that stops answering on an open connection is detected: stale, then recovered', async () => {
  await writer.put('/hang/services/search/s1', instance('search', 's1', '10.5.0.1', 9200));
  const proxy = await startZooKeeperProxy(zk.port);
  proxies.push(proxy);
  const { registry, logs } = await startZkRegistry(proxy.connectString, {
    curatorBase: '/hang/services',
    sessionTimeoutMs: 1500,
  });
  registries.push(registry);
  assert.deepEqual(endpointAddresses(registry, 'search.service.zk'), ['10.5.0.1:9200']);

  // The TCP connection stays up; nothing comes back. Only a read timeout can notice.
  proxy.hang();
  await eventually(() => {
    assert.equal(registry.status().stale, true);
    assert.ok(zkDebug(registry).unansweredConnections >= 1);
  });
  assert.deepEqual(
    endpointAddresses(registry, 'search.service.zk'),
    ['10.5.0.1:9200'],
    'last good state kept',
  );
  await writer.put('/hang/services/search/s2', instance('search', 's2', '10.5.0.2', 9200));

  proxy.restore();
  await eventually(
    () => {
      assert.equal(registry.status().stale, false);
      assert.deepEqual(endpointAddresses(registry, 'search.service.zk'), ['10.5.0.1:9200', '10.5.0.2:9200']);
    },
    { timeoutMs: 15_000 },
  );
  assert.ok(logs.some((l) => String(l.msg).startsWith('ZooKeeper did not answer the')));
});

test('a registry started while ZooKeeper is unreachable is not synced, and syncs once it is reachable', async () => {
  await writer.put('/unreachable/services/db/d1', instance('db', 'd1', '10.3.0.1', 5432));
  const proxy = await startZooKeeperProxy(zk.port);
  proxies.push(proxy);
  proxy.cut();
  const { registry } = await startZkRegistry(proxy.connectString, {
    curatorBase: '/unreachable/services',
    startTimeoutMs: 300,
  });
  registries.push(registry);
  assert.equal(registry.hasSynced(), false, 'start() returned without a sync');
  assert.equal(registry.status().stale, false, 'nothing is served, so nothing is stale');
  assert.match(registry.status().lastError ?? '', /no answer from ZooKeeper|disconnected/);
  assert.equal(registry.snapshot().services.size, 0);

  proxy.restore();
  await eventually(
    () => {
      assert.ok(registry.hasSynced());
      assert.deepEqual(endpointAddresses(registry, 'db.service.zk'), ['10.3.0.1:5432']);
    },
    { timeoutMs: 15_000 },
  );
});

test('a read that fails keeps the last good state, stale, and is retried with backoff until it succeeds', async () => {
  await writer.put('/acl/services/queue/q1', instance('queue', 'q1', '10.4.0.1', 5672));
  const { registry, logs } = await startZkRegistry(zk.connectString, { curatorBase: '/acl/services' });
  registries.push(registry);
  assert.deepEqual(endpointAddresses(registry, 'queue.service.zk'), ['10.4.0.1:5672']);

  // A new service node nobody may read: listing its instances fails with NO_AUTH.
  const app = await ZkTestClient.connect(zk.connectString);
  try {
    await app.put('/acl/services/locked', undefined, 'persistent', [
      aclFor(zookeeper.Permission.ALL & ~zookeeper.Permission.READ),
    ]);
    await app.put('/acl/services/locked/l1', instance('locked', 'l1', '10.4.0.2', 9000));
    await eventually(
      () => {
        assert.equal(registry.status().stale, true);
        assert.match(registry.status().lastError ?? '', /NO_AUTH/);
        assert.ok(zkDebug(registry).resyncFailures >= 2, 'the resync is retried');
      },
      { timeoutMs: 15_000 },
    );
    assert.deepEqual(
      endpointAddresses(registry, 'queue.service.zk'),
      ['10.4.0.1:5672'],
      'last good state kept',
    );
    assert.equal(registry.snapshot().services.has('locked.service.zk'), false);
    assert.ok(
      logs.some((l) => l.msg === 'ZooKeeper resync failed; retrying' && typeof l.delayMs === 'number'),
    );

    // Readable again: the next retry succeeds and publishes the full state.
    await app.setAcl('/acl/services/locked', [aclFor(zookeeper.Permission.ALL)]);
    await eventually(
      () => {
        assert.equal(registry.status().stale, false);
        assert.deepEqual(endpointAddresses(registry, 'locked.service.zk'), ['10.4.0.2:9000']);
      },
      { timeoutMs: 35_000 },
    );
  } finally {
    await app.close();
  }
});

function aclFor(perms: number): zookeeper.ACL {
  return new zookeeper.ACL(perms, new zookeeper.Id('world', 'anyone'));
}
