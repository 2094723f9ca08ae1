// The zookeeper registry against a real ZooKeeper server (Debian's package, started per file):
// Curator and Dubbo registrations and removals, ephemeral nodes, malformed nodes, chroot, and the
// aggregate's conflict rule with the mock registry.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ZooKeeperRegistry } from '../../adapters/zookeeper/registry.js';
import { registryz } from '../../admin/debug-views.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { curatorInstanceJson, dubboProviderNode, ZkTestClient } from '../support/zookeeper-client.js';
import { endpointAddresses, startZkRegistry, zkDebug } from '../support/zookeeper-fixtures.js';
import { startZooKeeperServer, type ZooKeeperServer } from '../support/zookeeper-server.js';

let zk: ZooKeeperServer;
let writer: ZkTestClient;
const registries: ZooKeeperRegistry[] = [];

before(async () => {
  zk = await startZooKeeperServer();
  writer = await ZkTestClient.connect(zk.connectString);
});

after(async () => {
  await Promise.all(registries.map((r) => r.stop()));
  await writer.close();
  await zk.destroy();
});

/** A registry whose Curator base and Dubbo root are private to one test. */
async function registryUnder(prefix: string, hosts = zk.connectString) {
  const captured = await startZkRegistry(hosts, {
    curatorBase: `${prefix}/services`,
    dubboRoot: `${prefix}/dubbo`,
  });
  registries.push(captured.registry);
  return captured;
}

test('Curator instances become NAME.service.zk, following adds, data changes, disabling and removals', async () => {
  const base = '/curator-crud/services';
  await writer.put(
    `${base}/orders/i1`,
    curatorInstanceJson({
      name: 'orders',
      id: 'i1',
      address: '10.0.0.1',
      port: 8080,
      metadata: { protocol: 'grpc', version: 'v1' },
    }),
  );
  await writer.put(
    `${base}/orders/i2`,
    curatorInstanceJson({ name: 'orders', id: 'i2', address: '10.0.0.2', port: 8080 }),
  );
  const { registry } = await registryUnder('/curator-crud');
  assert.ok(registry.hasSynced());

  const service = registry.snapshot().services.get('orders.service.zk');
  assert.deepEqual(service?.ports, [{ name: 'port', number: 8080, protocol: 'GRPC' }]);
  assert.equal(service?.registry, 'zookeeper');
  assert.deepEqual(endpointAddresses(registry, 'orders.service.zk'), ['10.0.0.1:8080', '10.0.0.2:8080']);
  const first = registry.snapshot().endpoints.get('orders.service.zk')?.[0];
  assert.deepEqual(first?.labels, { instance_status: 'UP', protocol: 'grpc', version: 'v1' });

  // Two data changes in a row: the data watch is re-armed after the first.
  for (const address of ['10.0.0.11', '10.0.0.21']) {
    await writer.put(
      `${base}/orders/i2`,
      curatorInstanceJson({ name: 'orders', id: 'i2', address, port: 8080 }),
    );
    await eventually(() =>
      assert.deepEqual(
        endpointAddresses(registry, 'orders.service.zk'),
        ['10.0.0.1:8080', `${address}:8080`].sort(),
      ),
    );
  }

  // A disabled instance is left out; an instance with an sslPort adds the service's ssl-port.
  await writer.put(
    `${base}/orders/i3`,
    curatorInstanceJson({ name: 'orders', id: 'i3', address: '10.0.0.3', port: 8080, enabled: false }),
  );
  await writer.put(
    `${base}/orders/i4`,
    curatorInstanceJson({
      name: 'orders',
      id: 'i4',
      address: '10.0.0.4',
      port: 8080,
      sslPort: 8443,
      metadata: { protocol: 'GRPC' },
    }),
  );
  await eventually(() => {
    assert.deepEqual(
      endpointAddresses(registry, 'orders.service.zk'),
      ['10.0.0.1:8080', '10.0.0.21:8080', '10.0.0.4:8080/8443'].sort(),
    );
    assert.deepEqual(
      registry
        .snapshot()
        .services.get('orders.service.zk')
        ?.ports.map((p) => `${p.name}:${p.number}:${p.protocol}`),
      ['port:8080:GRPC', 'ssl-port:8443:TLS'],
    );
  });
  assert.equal(zkDebug(registry).disabledInstances, 1);

  // A second service under the same base.
  await writer.put(
    `${base}/billing/b1`,
    curatorInstanceJson({ name: 'billing', id: 'b1', address: '10.0.1.1', port: 9090 }),
  );
  await eventually(() =>
    assert.deepEqual(endpointAddresses(registry, 'billing.service.zk'), ['10.0.1.1:9090']),
  );

  // The last instance gone: the service stays, with no endpoints at all (not stale ones).
  for (const id of ['i1', 'i2', 'i3', 'i4']) await writer.remove(`${base}/orders/${id}`);
  await eventually(() => {
    assert.ok(registry.snapshot().services.has('orders.service.zk'));
    assert.deepEqual(endpointAddresses(registry, 'orders.service.zk'), []);
  });
  // Its NAME node deleted: the service goes too; the other is untouched.
  await writer.remove(`${base}/orders`);
  await eventually(() => assert.equal(registry.snapshot().services.has('orders.service.zk'), false));
  assert.deepEqual(endpointAddresses(registry, 'billing.service.zk'), ['10.0.1.1:9090']);
  assert.equal(registry.status().stale, false);
});

test('a base path created after start is watched into existence', async () => {
  const { registry } = await registryUnder('/late');
  assert.ok(registry.hasSynced(), 'an absent base is an empty registry, not a failure');
  assert.equal(registry.snapshot().services.size, 0);
  await writer.put(
    '/late/services/late/x1',
    curatorInstanceJson({ name: 'late', id: 'x1', address: '10.0.2.1', port: 7000 }),
  );
  await eventually(() => assert.deepEqual(endpointAddresses(registry, 'late.service.zk'), ['10.0.2.1:7000']));
});

test('ephemeral instances vanish with the session that registered them', async () => {
  const { registry } = await registryUnder('/ephemeral');
  await writer.put('/ephemeral/services/cart', undefined);
  const app = await ZkTestClient.connect(zk.connectString);
  await app.put(
    '/ephemeral/services/cart/e1',
    curatorInstanceJson({ name: 'cart', id: 'e1', address: '10.0.3.1', port: 7070 }),
    'ephemeral',
  );
  await app.put(
    '/ephemeral/services/cart/e2',
    curatorInstanceJson({ name: 'cart', id: 'e2', address: '10.0.3.2', port: 7070 }),
    'ephemeral',
  );
  await eventually(() =>
    assert.deepEqual(endpointAddresses(registry, 'cart.service.zk'), ['10.0.3.1:7070', '10.0.3.2:7070']),
  );
  await app.close();
  await eventually(() => assert.deepEqual(endpointAddresses(registry, 'cart.service.zk'), []));
  assert.ok(
    registry.snapshot().services.has('cart.service.zk'),
    'the service outlives its instances while its node exists',
  );
});

test('Dubbo providers become services named by the dubbo2istio rule, with the URL query as labels', async () => {
  const { registry } = await registryUnder('/dubbo-crud');
  const providers = '/dubbo-crud/dubbo/org.apache.dubbo.samples.GreetingService/providers';
  const url = (address: string, extra = ''): string =>
    `dubbo://${address}:20880/org.apache.dubbo.samples.GreetingService?anyhost=true&application=greeter` +
    `&group=Blue&interface=org.apache.dubbo.samples.GreetingService&methods=greet,hello&side=provider&version=1.0.0${extra}`;
  await writer.put(`${providers}/${dubboProviderNode(url('10.0.4.1'))}`, undefined, 'ephemeral');
  await writer.put(
    `${providers}/${dubboProviderNode(url('10.0.4.2', '&weight=50'))}`,
    undefined,
    'ephemeral',
  );
  // Triple (gRPC) on another port of the same interface, without group or version.
  await writer.put(
    `${providers}/${dubboProviderNode('tri://10.0.4.3:50051/org.apache.dubbo.samples.GreetingService?interface=org.apache.dubbo.samples.GreetingService')}`,
    undefined,
    'ephemeral',
  );

  const host = 'org.apache.dubbo.samples.greetingservice-blue-1-0-0';
  await eventually(() =>
    assert.deepEqual(endpointAddresses(registry, host), ['10.0.4.1:20880', '10.0.4.2:20880']),
  );
  const service = registry.snapshot().services.get(host);
  assert.deepEqual(service?.ports, [{ name: 'dubbo', number: 20880, protocol: 'TCP' }]);
  assert.deepEqual(service?.labels, {
    interface: 'org.apache.dubbo.samples.GreetingService',
    group: 'Blue',
    version: '1.0.0',
  });
  const [e1, e2] = registry.snapshot().endpoints.get(host) ?? [];
  assert.equal(e1?.labels.methods, 'greet,hello');
  assert.equal(e1?.labels.application, 'greeter');
  assert.deepEqual([e1?.weight, e2?.weight], [100, 50], "Dubbo's default weight is 100");

  const tri = 'org.apache.dubbo.samples.greetingservice';
  await eventually(() =>
    assert.deepEqual(registry.snapshot().services.get(tri)?.ports, [
      { name: 'tri', number: 50051, protocol: 'GRPC' },
    ]),
  );

  // Providers unregister: their endpoints go at once, none are kept.
  await writer.removeTree(providers);
  await eventually(() => {
    assert.deepEqual(endpointAddresses(registry, host), []);
    assert.deepEqual(endpointAddresses(registry, tri), []);
  });
  // A provider registering again under a re-created providers node is seen: the watch followed it.
  await writer.put(`${providers}/${dubboProviderNode(url('10.0.4.9'))}`, undefined, 'ephemeral');
  await eventually(() => assert.deepEqual(endpointAddresses(registry, host), ['10.0.4.9:20880']));
});

test('malformed nodes are logged, listed in debug(), and skipped; their valid siblings are served', async () => {
  const base = '/malformed/services';
  await writer.put(
    `${base}/shop/good`,
    curatorInstanceJson({ name: 'shop', id: 'good', address: '10.0.5.1', port: 8080 }),
  );
  await writer.put(`${base}/shop/not-json`, '{"name": "shop", "address": ');
  await writer.put(
    `${base}/shop/hostname`,
    curatorInstanceJson({ name: 'shop', id: 'hostname', address: 'shop-1.example.com', port: 8080 }),
  );
  await writer.put(
    `${base}/shop/bad-port`,
    curatorInstanceJson({ name: 'shop', id: 'bad-port', address: '10.0.5.2', port: 70000 }),
  );
  await writer.put(`${base}/shop/empty`, undefined);
  const providers = '/malformed/dubbo/org.demo.Broken/providers';
  await writer.put(`${providers}/not-a-url`, undefined);
  await writer.put(
    `${providers}/${dubboProviderNode('dubbo://10.0.5.3/org.demo.Broken?interface=org.demo.Broken')}`,
    undefined,
  );

  const { registry, logs } = await registryUnder('/malformed');
  assert.deepEqual(endpointAddresses(registry, 'shop.service.zk'), ['10.0.5.1:8080']);
  const debug = zkDebug(registry);
  const reasons = Object.fromEntries(debug.invalidNodes.map((p) => [p.path, p.reason]));
  assert.equal(debug.invalidNodeCount, 6);
  assert.match(reasons[`${base}/shop/not-json`] ?? '', /^not JSON/);
  assert.match(reasons[`${base}/shop/hostname`] ?? '', /not an IP address/);
  assert.match(reasons[`${base}/shop/bad-port`] ?? '', /port: must be an integer in 1\.\.65535/);
  assert.match(reasons[`${base}/shop/empty`] ?? '', /no data/);
  assert.match(reasons[`${providers}/not-a-url`] ?? '', /not a provider URL/);
  assert.equal(debug.invalidNodes.filter((p) => p.layout === 'dubbo').length, 2);
  const warned = logs.filter((l) => l.msg === 'skipping ZooKeeper node').map((l) => l.path);
  assert.equal(warned.length, 6, 'each bad node is logged once');
  assert.ok(warned.includes(`${base}/shop/not-json`));
  assert.equal(registry.status().stale, false, 'bad nodes do not make the registry stale');

  // Fixing a node serves it, and drops it from the report.
  await writer.put(
    `${base}/shop/not-json`,
    curatorInstanceJson({ name: 'shop', id: 'not-json', address: '10.0.5.4', port: 8080 }),
  );
  await eventually(() => {
    assert.deepEqual(endpointAddresses(registry, 'shop.service.zk'), ['10.0.5.1:8080', '10.0.5.4:8080']);
    assert.equal(zkDebug(registry).invalidNodeCount, 5);
  });
});

test('the same hostname in mock and zookeeper: mock (first) owns the service, endpoints are merged', async () => {
  const base = '/conflict/services';
  await writer.put(
    `${base}/pay/p1`,
    curatorInstanceJson({ name: 'pay', id: 'p1', address: '10.0.6.1', port: 7070 }),
  );
  // p2 serves only a TLS port, which mock's service does not have.
  await writer.put(
    `${base}/pay/p2`,
    curatorInstanceJson({ name: 'pay', id: 'p2', address: '10.0.6.2', sslPort: 7443 }),
  );
  const { registry } = await registryUnder('/conflict');
  const plane = await startInProcessPlane({ extraRegistries: [registry] });
  try {
    plane.mock.putService(mockService('pay.service.zk', [servicePort('grpc', 7070)]));
    plane.mock.setEndpoints('pay.service.zk', [endpoint('10.0.6.9', { grpc: 7070 })]);

    const owner = plane.discovery.service('pay.service.zk');
    assert.equal(owner?.registry, 'mock');
    assert.deepEqual(owner?.ports, [{ name: 'grpc', number: 7070, protocol: 'GRPC' }]);
    // zookeeper's endpoints are mapped onto mock's ports by number: p2 serves none of them.
    const merged = plane.discovery
      .endpoints('pay.service.zk', 7070)
      .map((e) => `${e.endpoint.address}:${e.port}`);
    assert.deepEqual(merged.sort(), ['10.0.6.1:7070', '10.0.6.9:7070']);
    assert.deepEqual(plane.discovery.conflicts(), [
      { hostname: 'pay.service.zk', owner: 'mock', shadowed: ['zookeeper'] },
    ]);

    const view = registryz(plane.discovery) as {
      registries: {
        name: string;
        status: { synced: boolean; stale: boolean };
        debug?: { connection: string };
      }[];
      conflicts: unknown[];
    };
    const zkView = view.registries.find((r) => r.name === 'zookeeper');
    assert.equal(zkView?.status.synced, true);
    assert.equal(zkView?.status.stale, false);
    assert.equal(zkView?.debug?.connection, 'connected');
    assert.deepEqual(view.conflicts, [
      { hostname: 'pay.service.zk', owner: 'mock', shadowed: ['zookeeper'] },
    ]);

    // A ZooKeeper change still reaches the merged view.
    await writer.put(
      `${base}/pay/p3`,
      curatorInstanceJson({ name: 'pay', id: 'p3', address: '10.0.6.3', port: 7070 }),
    );
    await eventually(() =>
      assert.deepEqual(
        plane.discovery
          .endpoints('pay.service.zk', 7070)
          .map((e) => e.endpoint.address)
          .sort(),
        ['10.0.6.1', '10.0.6.3', '10.0.6.9'],
      ),
    );
  } finally {
    await plane.stop();
  }
});

test('a chroot in --zk-hosts scopes every path', async () => {
  await writer.put(
    '/tenant-a/services/inventory/c1',
    curatorInstanceJson({ name: 'inventory', id: 'c1', address: '10.0.7.1', port: 8080 }),
  );
  const { registry } = await startZkRegistry(`${zk.connectString}/tenant-a`);
  registries.push(registry);
  assert.deepEqual(endpointAddresses(registry, 'inventory.service.zk'), ['10.0.7.1:8080']);
  await writer.put(
    '/tenant-a/services/inventory/c2',
    curatorInstanceJson({ name: 'inventory', id: 'c2', address: '10.0.7.2', port: 8080 }),
  );
  await eventually(() =>
    assert.deepEqual(endpointAddresses(registry, 'inventory.service.zk'), ['10.0.7.1:8080', '10.0.7.2:8080']),
  );
});
