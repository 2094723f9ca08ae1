// A mass loss of ephemeral nodes seen by a registry that just reconnected: the fault that cut
// Portolan off also cut off the fleet, whose sessions (and ephemeral instance nodes) are gone when
// Portolan reads the tree again. Every endpoint of the service vanishing at once then keeps its
// last endpoints, stale, for --zk-empty-hold, until the fleet registers again or the hold runs
// out. It used to publish an empty endpoint set at once, i.e. empty EDS to every client. Against
// a real ZooKeeper (Debian's package), the registry behind a TCP proxy that cuts it off.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
const apps: ZkTestClient[] = [];

before(async () => {
  zk = await startZooKeeperServer();
  writer = await ZkTestClient.connect(zk.connectString);
});

after(async () => {
  await Promise.all(registries.map((r) => r.stop()));
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(apps.map((a) => a.close()));
  await writer.close();
  await zk.destroy();
});

const instance = (id: string, address: string): string =>
  curatorInstanceJson({ name: 'cart', id, address, port: 7070 });

interface HoldDebug {
  emptyHold: { armed: boolean; held: { service: string; endpoints: number }[] };
}

/** The fleet (one app session, two ephemeral instances) and a registry reading them through a proxy. */
async function fleetAndRegistry(root: string, emptyHoldMs: number) {
  await writer.put(`${root}/services/cart`, undefined);
  const app = await ZkTestClient.connect(zk.connectString);
  apps.push(app);
  await app.put(`${root}/services/cart/e1`, instance('e1', '10.7.0.1'), 'ephemeral');
  await app.put(`${root}/services/cart/e2`, instance('e2', '10.7.0.2'), 'ephemeral');
  const proxy = await startZooKeeperProxy(zk.port);
  proxies.push(proxy);
  const { registry, logs } = await startZkRegistry(proxy.connectString, {
    curatorBase: `${root}/services`,
    sessionTimeoutMs: 1000,
    emptyHoldMs,
  });
  registries.push(registry);
  assert.deepEqual(endpointAddresses(registry, 'cart.service.zk'), ['10.7.0.1:7070', '10.7.0.2:7070']);
  return { app, proxy, registry, logs };
}

/** Cuts the registry off, ends the fleet's session meanwhile, and lets the registry reconnect. */
async function massLossDuringOutage(registry: ZooKeeperRegistry, proxy: ZooKeeperProxy, app: ZkTestClient) {
  const lastResync = () => (registry.debug() as { lastResync?: { at: string } }).lastResync?.at;
  const resynced = lastResync();
  proxy.cut();
  await eventually(() => assert.equal(registry.status().stale, true), { what: 'the registry to notice' });
  await app.close(); // its ephemeral instances go with it
  proxy.restore();
  await eventually(() => assert.notEqual(lastResync(), resynced), {
    timeoutMs: 15_000,
    what: 'the resync after the reconnect to complete',
  });
}

test('right after a reconnect, a service that lost every endpoint keeps them, stale, until the fleet registers again', async () => {
  const { app, proxy, registry, logs } = await fleetAndRegistry('/massloss-back', 60_000);
  await massLossDuringOutage(registry, proxy, app);

  assert.deepEqual(
    endpointAddresses(registry, 'cart.service.zk'),
    ['10.7.0.1:7070', '10.7.0.2:7070'],
    'the last endpoints are kept',
  );
  assert.equal(registry.status().stale, true);
  assert.match(
    registry.status().lastError ?? '',
    /cart\.service\.zk lost every endpoint at once; keeping its last 2 until /,
  );
  assert.deepEqual(
    (registry.debug() as HoldDebug).emptyHold.held.map((h) => [h.service, h.endpoints]),
    [['cart.service.zk', 2]],
  );
  assert.ok(logs.some((l) => String(l.msg).startsWith('every endpoint of a ZooKeeper service vanished')));

  // The fleet registers again (a new session): its endpoints replace the held ones at once.
  const back = await ZkTestClient.connect(zk.connectString);
  apps.push(back);
  await back.put('/massloss-back/services/cart/e3', instance('e3', '10.7.0.3'), 'ephemeral');
  await eventually(() => {
    assert.deepEqual(endpointAddresses(registry, 'cart.service.zk'), ['10.7.0.3:7070']);
    assert.equal(registry.status().stale, false);
  });
  assert.deepEqual((registry.debug() as HoldDebug).emptyHold.held, []);
});

test('the hold is bounded: when it runs out, the empty service is applied and the registry is no longer stale', async () => {
  const { app, proxy, registry } = await fleetAndRegistry('/massloss-expire', 1500);
  await massLossDuringOutage(registry, proxy, app);
  assert.deepEqual(endpointAddresses(registry, 'cart.service.zk'), ['10.7.0.1:7070', '10.7.0.2:7070']);
  await eventually(
    () => {
      assert.deepEqual(endpointAddresses(registry, 'cart.service.zk'), []);
      assert.equal(registry.status().stale, false);
    },
    { what: 'the hold to run out' },
  );
  assert.ok(registry.snapshot().services.has('cart.service.zk'), 'the service stays while its node does');
});

test('sessions expiring across the fleet and the registry at once: the new session holds the last endpoints', async () => {
  // The fleet reaches ZooKeeper through its own proxy, so one fault can cut it off too; ZooKeeper,
  // still up, expires every session cut off past its timeout and deletes their ephemeral nodes.
  const root = '/massloss-expiry';
  await writer.put(`${root}/services/cart`, undefined);
  const fleetProxy = await startZooKeeperProxy(zk.port);
  proxies.push(fleetProxy);
  const app = await ZkTestClient.connect(fleetProxy.connectString, 1000);
  apps.push(app);
  await app.put(`${root}/services/cart/e1`, instance('e1', '10.8.0.1'), 'ephemeral');
  await app.put(`${root}/services/cart/e2`, instance('e2', '10.8.0.2'), 'ephemeral');
  const proxy = await startZooKeeperProxy(zk.port);
  proxies.push(proxy);
  const { registry, logs } = await startZkRegistry(proxy.connectString, {
    curatorBase: `${root}/services`,
    sessionTimeoutMs: 1000,
    emptyHoldMs: 60_000,
  });
  registries.push(registry);
  assert.deepEqual(endpointAddresses(registry, 'cart.service.zk'), ['10.8.0.1:7070', '10.8.0.2:7070']);

  const lastResync = () => (registry.debug() as { lastResync?: { at: string } }).lastResync?.at;
  const resynced = lastResync();
  const registrySession = zkDebug(registry).sessionId;
  proxy.cut();
  await eventually(() => assert.equal(registry.status().stale, true), { what: 'the registry to notice' });
  fleetProxy.cut();
  await eventually(async () => assert.deepEqual(await writer.children(`${root}/services/cart`), []), {
    timeoutMs: 15_000,
    what: "ZooKeeper to expire the fleet's session and delete its instances",
  });
  // Cutting the registry off first does not make its session expire first: ZooKeeper times a
  // session from the last packet it received, and the registry's resync reads and probes came
  // after the fleet's last write. Restored before its own expiry, the registry rightly resumes
  // the same session (ZooKeeper answers the handshake with the session's timeout), so wait until
  // ZooKeeper has expired it too.
  await eventually(async () => assert.equal(await zk.hasSession(registrySession), false), {
    timeoutMs: 15_000,
    what: "ZooKeeper to expire the registry's session",
  });
  proxy.restore();
  await eventually(
    () => {
      assert.equal(zkDebug(registry).sessions, 2, 'a new session replaced the expired one');
      assert.notEqual(lastResync(), resynced);
    },
    { timeoutMs: 45_000, what: 'the resync on a new session' },
  );
  assert.ok(logs.some((l) => l.msg === 'ZooKeeper session expired; opening a new session'));
  assert.deepEqual(
    endpointAddresses(registry, 'cart.service.zk'),
    ['10.8.0.1:7070', '10.8.0.2:7070'],
    'the last endpoints are kept, not an empty set',
  );
  assert.equal(registry.status().stale, true);
  assert.deepEqual(
    (registry.debug() as HoldDebug).emptyHold.held.map((h) => [h.service, h.endpoints]),
    [['cart.service.zk', 2]],
  );

  // The fleet re-registers on new sessions: the hold ends with what it registers.
  const back = await ZkTestClient.connect(zk.connectString);
  apps.push(back);
  await back.put(`${root}/services/cart/e1`, instance('e1', '10.8.0.1'), 'ephemeral');
  await eventually(() => {
    assert.deepEqual(endpointAddresses(registry, 'cart.service.zk'), ['10.8.0.1:7070']);
    assert.equal(registry.status().stale, false);
  });
});
