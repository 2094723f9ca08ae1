// Cache flooding (issue #17, item 1): a client naming resources that do not exist costs the server
// nothing shared, a name that did not exist is still sent once it appears, a subscription is capped
// per type (--max-names-per-type, INVALID_ARGUMENT beyond it) and a request above 4 MiB is refused.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { startPortolanProcess } from '../support/portolan-process.js';
import { grpcNode, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';
import { RawDeltaClient } from '../support/raw-delta-client.js';

const HOST = 'real.flood.internal';
const REAL = `outbound|7070||${HOST}`;
const missing = (i: number): string => `outbound|7070||nx-${i}.flood.internal`;
const names = (n: number): string[] => Array.from({ length: n }, (_, i) => missing(i));

async function startPlane(t: TestContext): Promise<InProcessPlane> {
  const plane = await startInProcessPlane();
  t.after(() => plane.stop());
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
  plane.mock.setEndpoints(HOST, [endpoint('10.0.0.1', { grpc: 9000 })]);
  return plane;
}

function connect(t: TestContext, address: string): RawAdsClient {
  const client = new RawAdsClient(address);
  t.after(() => client.close());
  return client;
}

test('names that do not exist leave no entry in the shared cache, while the stream is open or after', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  client.send({ node: grpcNode('flooder'), type_url: CLUSTER, resource_names: [REAL, ...names(5000)] });
  const cds = await client.next();
  assert.deepEqual(resourceNames(cds), [REAL]);
  assert.equal(plane.ads.gauges.cachedResources(), 1, 'only the cluster that exists is cached');
  // A change of every host's services (a service change rebuilds every cached entry) finds nothing of the flood.
  plane.mock.putService(mockService('other.flood.internal', [servicePort('grpc', 7070)]));
  client.close();
  assert.equal(plane.ads.gauges.cachedResources(), 1);
});

test('a cluster asked for before it existed is sent when its service appears (SotW CDS and EDS, delta)', async (t) => {
  const plane = await startPlane(t);
  const later = 'later.flood.internal';
  const cluster = `outbound|7070||${later}`;
  const sotw = connect(t, plane.address);
  sotw.send({ node: grpcNode('early-sotw'), type_url: CLUSTER, resource_names: [REAL, cluster] });
  const first = await sotw.next();
  assert.deepEqual(resourceNames(first), [REAL]);
  sotw.ack(first, [REAL, cluster]);
  sotw.send({ type_url: ENDPOINT, resource_names: [REAL, cluster] });
  const eds = await sotw.next();
  assert.deepEqual(resourceNames(eds), [REAL]);
  sotw.ack(eds, [REAL, cluster]);

  const delta = new RawDeltaClient(plane.address);
  t.after(() => delta.close());
  delta.send({ node: grpcNode('early-delta'), type_url: CLUSTER, resource_names_subscribe: [cluster] });
  const told = await delta.next();
  assert.deepEqual(told.removed_resources, [cluster], 'told once that it does not exist');
  delta.ack(told);

  plane.mock.putService(mockService(later, [servicePort('grpc', 7070)]));
  plane.mock.setEndpoints(later, [endpoint('10.0.0.2', { grpc: 9000 })]);
  const cds = await sotw.next();
  assert.equal(cds.type_url, CLUSTER);
  assert.deepEqual(resourceNames(cds).sort(), [cluster, REAL].sort());
  sotw.ack(cds, [REAL, cluster]);
  for (;;) {
    const res = await sotw.next();
    sotw.ack(res, [REAL, cluster]);
    if (res.type_url === ENDPOINT && resourceNames(res).includes(cluster)) break;
  }
  const appeared = await delta.next();
  assert.deepEqual(
    appeared.resources.map((r) => r.name),
    [cluster],
  );
});

test('a request listing more names than --max-names-per-type (10,000) ends the stream with INVALID_ARGUMENT', async (t) => {
  const plane = await startPlane(t);
  const atLimit = connect(t, plane.address);
  atLimit.send({ node: grpcNode('at-limit'), type_url: CLUSTER, resource_names: names(10_000) });
  assert.equal((await atLimit.next(20_000)).type_url, CLUSTER, '10,000 names are accepted');

  const over = connect(t, plane.address);
  over.send({ node: grpcNode('over'), type_url: CLUSTER, resource_names: names(10_001) });
  const status = await over.status(20_000);
  assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
  assert.match(status.details, /CDS: the request lists 10001 resource names.*--max-names-per-type/);
  assert.equal(plane.ads.gauges.cachedResources(), 0, 'the refused request built nothing');
});

test('a delta stream subscribing beyond --max-names-per-type, over several requests, is ended', async (t) => {
  const plane = await startPlane(t);
  const delta = new RawDeltaClient(plane.address);
  t.after(() => delta.close());
  delta.send({ node: grpcNode('delta-over'), type_url: ENDPOINT, resource_names_subscribe: names(6000) });
  delta.ack(await delta.next(20_000));
  delta.send({
    type_url: ENDPOINT,
    resource_names_subscribe: Array.from({ length: 6000 }, (_, i) => missing(6000 + i)),
  });
  await assert.rejects(delta.next(20_000), /stream ended \(3: EDS: the stream would subscribe to 12000/);
});

test('portolan serve refuses a request above 4 MiB with RESOURCE_EXHAUSTED', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-flood-'));
  const serve = await startPortolanProcess(['--registries', 'mock', '--data-dir', join(dir, 'data')]);
  t.after(async () => {
    await serve.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const client = connect(t, serve.xdsAddress);
  // A node with 5 MiB of metadata and a handful of names: the size alone is refused.
  const node = {
    ...grpcNode('huge'),
    metadata: { fields: { PAD: { stringValue: 'x'.repeat(5 * 1024 * 1024) } } },
  };
  client.send({ node, type_url: CLUSTER, resource_names: [REAL] });
  const status = await client.status(20_000);
  assert.equal(status.code, grpc.status.RESOURCE_EXHAUSTED, status.details);
});
