// End to end: instances registered in a real ZooKeeper (Curator and Dubbo layouts) → zookeeper
// registry → aggregate → ADS → the real @grpc/grpc-js-xds client, which follows ZooKeeper changes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ZooKeeperRegistry } from '../../adapters/zookeeper/registry.js';
import { callEcho, startEchoBackend, type EchoBackend, type EchoClient } from '../support/echo-backend.js';
import type { DecodedLoadAssignment } from '../support/decoded-xds.js';
import { lbAddresses } from '../support/decoded-xds.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { decodedResources, grpcNode, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';
import { xdsEchoClient } from '../support/xds-client.js';
import { ENDPOINT } from '../../xds/proto/type-urls.js';
import { curatorInstanceJson, dubboProviderNode, ZkTestClient } from '../support/zookeeper-client.js';
import { startZkRegistry } from '../support/zookeeper-fixtures.js';
import { startZooKeeperServer, type ZooKeeperServer } from '../support/zookeeper-server.js';

let zk: ZooKeeperServer;
let writer: ZkTestClient;
let registry: ZooKeeperRegistry;
let plane: InProcessPlane;
let b1: EchoBackend;
let b2: EchoBackend;

before(async () => {
  zk = await startZooKeeperServer();
  writer = await ZkTestClient.connect(zk.connectString);
  b1 = await startEchoBackend('b1', '127.0.0.1');
  b2 = await startEchoBackend('b2', '127.0.0.2', b1.port);
  ({ registry } = await startZkRegistry(zk.connectString));
  plane = await startInProcessPlane({ extraRegistries: [registry] });
});

after(async () => {
  await plane.stop();
  await Promise.all([b1.stop(), b2.stop()]);
  await writer.close();
  await zk.destroy();
});

/** The set of backends that answer `calls` consecutive calls. */
async function backendsReached(client: EchoClient, calls = 8): Promise<string[]> {
  const seen = new Set<string>();
  for (let i = 0; i < calls; i++) seen.add(await callEcho(client, 2000));
  return [...seen].sort();
}

test('a proxyless gRPC client follows Curator registrations, removals and a vanished session', async () => {
  const echo = (id: string, backend: EchoBackend): string =>
    curatorInstanceJson({
      name: 'echo',
      id,
      address: backend.address,
      port: backend.port,
      metadata: { protocol: 'grpc' },
    });
  await writer.put('/services/echo/i1', echo('i1', b1));
  const client = xdsEchoClient(`xds:///echo.service.zk:${b1.port}`, plane.address, 'zk-curator-client');
  try {
    await eventually(async () => assert.deepEqual(await backendsReached(client), ['b1']));

    // A second instance, registered ephemerally by its own session, and the first one removed.
    const app = await ZkTestClient.connect(zk.connectString);
    await app.put('/services/echo/i2', echo('i2', b2), 'ephemeral');
    await eventually(async () => assert.deepEqual(await backendsReached(client), ['b1', 'b2']));
    await writer.remove('/services/echo/i1');
    await eventually(async () => assert.deepEqual(await backendsReached(client), ['b2']));

    // Its session closes: the last instance is gone, and EDS carries no endpoints at all. (Seen on a
    // raw ADS stream: grpc-js-xds 1.14 leaves a 15-minute timer behind when a cluster's EDS goes
    // empty, which would keep this test process alive.)
    client.close();
    const ads = new RawAdsClient(plane.address);
    try {
      const cluster = `outbound|${b1.port}||echo.service.zk`;
      ads.send({ node: grpcNode('zk-eds-watcher'), type_url: ENDPOINT, resource_names: [cluster] });
      const first = await ads.next();
      assert.deepEqual(lbAddresses(decodedResources<DecodedLoadAssignment>(first)[0]), [b2.address]);
      ads.ack(first, [cluster]);
      await app.close();
      const push = await ads.next(10_000);
      assert.deepEqual(resourceNames(push), [cluster]);
      assert.deepEqual(lbAddresses(decodedResources<DecodedLoadAssignment>(push)[0]), []);
    } finally {
      ads.close();
    }
  } finally {
    client.close();
  }
});

test('a proxyless gRPC client reaches a Dubbo Triple provider by its dubbo2istio hostname', async () => {
  const url = `tri://${b2.address}:${b2.port}/org.demo.EchoService?interface=org.demo.EchoService&version=2.1&side=provider`;
  await writer.put(`/dubbo/org.demo.EchoService/providers/${dubboProviderNode(url)}`, undefined, 'ephemeral');
  const client = xdsEchoClient(
    `xds:///org.demo.echoservice-2-1:${b2.port}`,
    plane.address,
    'zk-dubbo-client',
  );
  try {
    await eventually(async () => assert.deepEqual(await backendsReached(client), ['b2']));
  } finally {
    client.close();
  }
});
