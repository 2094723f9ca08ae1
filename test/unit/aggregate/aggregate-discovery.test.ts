// The merge of several registries into one ServiceDiscovery: who owns a hostname, how endpoints are
// merged, readiness, change forwarding, and frozen catalogs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MockRegistry } from '../../../adapters/mock/registry.js';
import { AggregateDiscovery } from '../../../aggregate/aggregate-discovery.js';
import { endpointsOnly, changedHosts, type ChangeEvent } from '../../../model/change.js';
import { endpoint, mockService, servicePort } from '../../support/model-fixtures.js';
import { StubRegistry } from '../../support/stub-registry.js';

const HOST = 'shared.test';

function addresses(agg: AggregateDiscovery, host: string, port: number): string[] {
  return agg
    .endpoints(host, port)
    .map((pe) => `${pe.endpoint.address}:${pe.port}`)
    .sort();
}

/** mock (first) and other (second) both define HOST with different port names. */
async function twoRegistries(): Promise<{
  mock: MockRegistry;
  other: StubRegistry;
  agg: AggregateDiscovery;
}> {
  const mock = new MockRegistry();
  const other = new StubRegistry('other');
  const agg = new AggregateDiscovery([mock, other]);
  await agg.start();
  mock.putService(
    mockService(HOST, [servicePort('grpc', 7070), servicePort('admin', 9000, 'HTTP')], {
      labels: { from: 'mock' },
    }),
  );
  mock.setEndpoints(HOST, [endpoint('10.0.0.1', { grpc: 7071, admin: 9001 })]);
  other.publish(
    [
      mockService(HOST, [servicePort('rpc', 7070), servicePort('metrics', 9100, 'HTTP')], {
        labels: { from: 'other' },
        resolution: 'DNS',
      }),
    ],
    {
      [HOST]: [
        endpoint('10.0.0.2', { rpc: 7072 }), // serves 7070 under the other registry's name
        endpoint('10.0.0.3', { metrics: 9101 }), // serves only a port the owner does not have
      ],
    },
  );
  return { mock, other, agg };
}

test('the first registry in order owns the Service', async () => {
  const { agg } = await twoRegistries();
  const s = agg.service(HOST);
  assert.equal(s?.registry, 'mock');
  assert.deepEqual(s?.labels, { from: 'mock' });
  assert.equal(s?.resolution, 'STATIC');
  assert.deepEqual(
    s?.ports.map((p) => p.name),
    ['grpc', 'admin'],
  );
  assert.equal(agg.services().length, 1);
});

test('order decides ownership: the same registries reversed give the other owner', async () => {
  const mock = new MockRegistry();
  const other = new StubRegistry('other');
  const agg = new AggregateDiscovery([other, mock]);
  await agg.start();
  mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
  other.publish([mockService(HOST, [servicePort('rpc', 7070)])]);
  assert.equal(agg.service(HOST)?.registry, 'other');
  assert.deepEqual(agg.conflicts(), [{ hostname: HOST, owner: 'other', shadowed: ['mock'] }]);
});

test("endpoints from every registry are merged, a shadowing registry's re-keyed by port number", async () => {
  const { agg } = await twoRegistries();
  assert.deepEqual(addresses(agg, HOST, 7070), ['10.0.0.1:7071', '10.0.0.2:7072']);
  const merged = agg.endpoints(HOST, 7070).find((pe) => pe.endpoint.address === '10.0.0.2');
  assert.deepEqual(merged?.endpoint.ports, { grpc: 7072 }, "re-keyed onto the owner's port name");
});

test("a shadowing registry's endpoint serving none of the owner's ports is dropped", async () => {
  const { agg } = await twoRegistries();
  assert.deepEqual(addresses(agg, HOST, 9000), ['10.0.0.1:9001']);
  assert.deepEqual(agg.endpointsByIp(['10.0.0.3']), []);
});

test('a hostname only one registry defines is taken as is', async () => {
  const { other, agg } = await twoRegistries();
  other.publish([mockService('solo.test', [servicePort('rpc', 5000)])], {
    'solo.test': [endpoint('10.9.0.1', { rpc: 5001 })],
  });
  assert.equal(agg.service('solo.test')?.registry, 'other');
  assert.deepEqual(addresses(agg, 'solo.test', 5000), ['10.9.0.1:5001']);
});

test('conflicts() lists the owner and the shadowed registries', async () => {
  const { agg } = await twoRegistries();
  assert.deepEqual(agg.conflicts(), [{ hostname: HOST, owner: 'mock', shadowed: ['other'] }]);
});

test('conflicts() is empty when no hostname is defined twice', async () => {
  const mock = new MockRegistry();
  const other = new StubRegistry('other');
  const agg = new AggregateDiscovery([mock, other]);
  await agg.start();
  mock.putService(mockService('a.test', [servicePort('grpc', 7070)]));
  other.publish([mockService('b.test', [servicePort('grpc', 7070)])]);
  assert.deepEqual(agg.conflicts(), []);
});

test('hasSynced is true only once every registry has synced', async () => {
  const mock = new MockRegistry();
  const other = new StubRegistry('other');
  const agg = new AggregateDiscovery([mock, other]);
  assert.equal(agg.hasSynced(), false, 'neither synced');
  await agg.start(); // the mock registry syncs on start; the stub only when it publishes
  assert.equal(mock.hasSynced(), true);
  assert.equal(agg.hasSynced(), false, 'one still syncing');
  other.publish([]);
  assert.equal(agg.hasSynced(), true);
});

test("every registry's change events are forwarded", async () => {
  const mock = new MockRegistry();
  const other = new StubRegistry('other');
  const agg = new AggregateDiscovery([mock, other]);
  await agg.start();
  const events: ChangeEvent[] = [];
  agg.onChange((e) => events.push(e));
  mock.putService(mockService('a.test', [servicePort('grpc', 7070)]));
  mock.putEndpoint('a.test', endpoint('10.0.0.1', { grpc: 7070 }));
  other.publish([mockService('b.test', [servicePort('grpc', 7070)])]);
  assert.deepEqual(
    events.map((e) => ({ hostnames: [...changedHosts(e)], endpointsOnly: endpointsOnly(e) })),
    [
      { hostnames: ['a.test'], endpointsOnly: false },
      { hostnames: ['a.test'], endpointsOnly: true },
      { hostnames: ['b.test'], endpointsOnly: false },
    ],
  );
});

test('stop() stops forwarding change events', async () => {
  // A stub keeps publishing after stop() (a stopped mock registry would not), so only the aggregate
  // can hold the event back.
  const other = new StubRegistry('other');
  const agg = new AggregateDiscovery([other]);
  await agg.start();
  let events = 0;
  agg.onChange(() => events++);
  await agg.stop();
  other.publish([mockService('a.test', [servicePort('grpc', 7070)])]);
  assert.equal(events, 0);
});

test('a held catalog is frozen: it does not change after a registry changes', async () => {
  const { mock, agg } = await twoRegistries();
  const held = agg.catalog();
  mock.setEndpoints(HOST, [endpoint('10.0.0.9', { grpc: 7079 })]);
  mock.putService(mockService('new.test', [servicePort('grpc', 7070)]));
  assert.deepEqual(
    held
      .endpoints(HOST, 7070)
      .map((pe) => pe.endpoint.address)
      .sort(),
    ['10.0.0.1', '10.0.0.2'],
  );
  assert.equal(held.service('new.test'), undefined);
  assert.deepEqual(
    held.services().map((s) => s.hostname),
    [HOST],
  );
  // ...while a fresh catalog sees the change.
  assert.deepEqual(addresses(agg, HOST, 7070), ['10.0.0.2:7072', '10.0.0.9:7079']);
  assert.ok(agg.service('new.test'));
});

test('deleting the owner hands the hostname to the next registry', async () => {
  const { mock, agg } = await twoRegistries();
  mock.deleteService(HOST);
  const s = agg.service(HOST);
  assert.equal(s?.registry, 'other');
  assert.deepEqual(addresses(agg, HOST, 7070), ['10.0.0.2:7072']);
  assert.deepEqual(agg.conflicts(), []);
});
