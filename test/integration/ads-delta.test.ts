// Incremental ADS (DeltaAggregatedResources) on the wire: a raw delta client over loopback against
// the in-process plane, asserting per-resource versions, subscribe/unsubscribe, wildcard, removals,
// reconnects with initial_resource_versions, ACK/NACK by nonce, and a SotW stream beside a delta one.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { grpcNode, RawAdsClient, resourceNames, type DecodedResponse } from '../support/raw-ads-client.js';
import { deltaVersions, RawDeltaClient, type DecodedDeltaResponse } from '../support/raw-delta-client.js';

const A = 'a.mock.internal';
const B = 'b.mock.internal';
const CLUSTER_A = `outbound|7070||${A}`;
const CLUSTER_B = `outbound|7070||${B}`;

async function startPlane(t: TestContext): Promise<InProcessPlane> {
  const plane = await startInProcessPlane();
  t.after(() => plane.stop());
  for (const [host, ip] of [
    [A, '10.0.0.1'],
    [B, '10.0.0.2'],
  ] as const) {
    plane.mock.putService(mockService(host, [servicePort('grpc', 7070)]));
    plane.mock.setEndpoints(host, [endpoint(ip, { grpc: 9000 })]);
  }
  return plane;
}

function connect(t: TestContext, plane: InProcessPlane): RawDeltaClient {
  const client = new RawDeltaClient(plane.address);
  t.after(() => client.close());
  return client;
}

test('delta wildcard CDS sends every cluster with its version; an ACK is not answered', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane);
  client.send({ node: grpcNode('delta-1'), type_url: CLUSTER });
  const res = await client.next();
  assert.equal(res.type_url, CLUSTER);
  assert.deepEqual(Object.keys(deltaVersions(res)).sort(), [CLUSTER_A, CLUSTER_B]);
  assert.ok(res.resources.every((r) => r.version.length > 0 && r.resource.type_url === CLUSTER));
  assert.deepEqual(res.removed_resources, []);
  client.ack(res);
  await client.expectSilence();
  const conn = plane.ads.deltaConnectionList().find((c) => c.proxy?.id === 'delta-1');
  assert.equal(conn?.state.type(CLUSTER)?.ackedNonce, res.nonce);
});

test('delta EDS: subscribing adds only the new name, a change re-sends only it, unsubscribing stops it', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane);
  client.send({ node: grpcNode('delta-2'), type_url: ENDPOINT, resource_names_subscribe: [CLUSTER_A] });
  const first = await client.next();
  assert.deepEqual(Object.keys(deltaVersions(first)), [CLUSTER_A]);
  client.ack(first);

  client.send({ type_url: ENDPOINT, resource_names_subscribe: [CLUSTER_B] });
  const second = await client.next();
  assert.deepEqual(Object.keys(deltaVersions(second)), [CLUSTER_B], 'A is not sent again');
  client.ack(second);

  plane.mock.setEndpoints(A, [endpoint('10.0.0.9', { grpc: 9000 })]);
  const push = await client.next();
  assert.deepEqual(Object.keys(deltaVersions(push)), [CLUSTER_A]);
  assert.notEqual(deltaVersions(push)[CLUSTER_A], deltaVersions(first)[CLUSTER_A]);
  client.ack(push);

  client.send({ type_url: ENDPOINT, resource_names_unsubscribe: [CLUSTER_A] });
  await client.expectSilence();
  await plane.progress.after(() => plane.mock.setEndpoints(A, [endpoint('10.0.0.8', { grpc: 9000 })]));
  await client.expectSilence();
});

test('delta: a removed service is named in removed_resources', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane);
  client.send({ node: grpcNode('delta-3'), type_url: CLUSTER });
  client.ack(await client.next());
  plane.mock.deleteService(B);
  const push = await client.next();
  assert.deepEqual(push.removed_resources, [CLUSTER_B]);
  assert.deepEqual(push.resources, []);
});

test('delta: a name that does not exist is reported removed once', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane);
  const missing = 'outbound|7070||missing.mock.internal';
  client.send({ node: grpcNode('delta-4'), type_url: ENDPOINT, resource_names_subscribe: [missing] });
  const res = await client.next();
  assert.deepEqual(res.resources, []);
  assert.deepEqual(res.removed_resources, [missing]);
  client.ack(res);
  await client.expectSilence();
});

test('delta reconnect with initial_resource_versions re-sends only what changed', async (t) => {
  const plane = await startPlane(t);
  const first = connect(t, plane);
  first.send({ node: grpcNode('delta-5'), type_url: CLUSTER });
  const cds = await first.next();
  first.ack(cds);
  first.send({ type_url: ENDPOINT, resource_names_subscribe: [CLUSTER_A, CLUSTER_B] });
  const eds = await first.next();
  first.ack(eds);
  first.close();

  plane.mock.setEndpoints(A, [endpoint('10.0.0.7', { grpc: 9000 })]);
  const second = connect(t, plane);
  second.send({
    node: grpcNode('delta-5'),
    type_url: CLUSTER,
    initial_resource_versions: deltaVersions(cds),
  });
  const cdsAgain = await second.next();
  assert.deepEqual(cdsAgain.resources, [], 'clusters did not change: nothing re-sent');
  second.send({
    type_url: ENDPOINT,
    resource_names_subscribe: [CLUSTER_A, CLUSTER_B],
    initial_resource_versions: deltaVersions(eds),
  });
  const edsAgain = await second.next();
  assert.deepEqual(Object.keys(deltaVersions(edsAgain)), [CLUSTER_A], 'only the changed load assignment');
});

test('delta reconnect: initial_resource_versions naming a resource deleted meanwhile get it named removed', async (t) => {
  const plane = await startPlane(t);
  const first = connect(t, plane);
  first.send({ node: grpcNode('delta-8'), type_url: CLUSTER });
  const cds = await first.next();
  first.ack(cds);
  first.send({ type_url: ENDPOINT, resource_names_subscribe: [CLUSTER_A, CLUSTER_B] });
  const eds = await first.next();
  first.ack(eds);
  first.close();

  const pushes = plane.ads.pushes;
  plane.mock.deleteService(B);
  await eventually(() => assert.ok(plane.ads.pushes > pushes, 'the deletion was pushed'));
  const second = connect(t, plane);
  second.send({
    node: grpcNode('delta-8'),
    type_url: CLUSTER,
    initial_resource_versions: deltaVersions(cds),
  });
  const cdsAgain = await second.next();
  assert.deepEqual(cdsAgain.resources, [], 'A did not change');
  assert.deepEqual(cdsAgain.removed_resources, [CLUSTER_B]);
  second.ack(cdsAgain);
  second.send({
    type_url: ENDPOINT,
    resource_names_subscribe: [CLUSTER_A, CLUSTER_B],
    initial_resource_versions: deltaVersions(eds),
  });
  const edsAgain = await second.next();
  assert.deepEqual(edsAgain.resources, []);
  assert.deepEqual(edsAgain.removed_resources, [CLUSTER_B]);
  second.ack(edsAgain);
  await second.expectSilence();
});

test('delta NACK is recorded per nonce and the rejected resources are not re-sent until they change', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane);
  client.send({ node: grpcNode('delta-6'), type_url: ENDPOINT, resource_names_subscribe: [CLUSTER_A] });
  const res = await client.next();
  client.send({
    type_url: ENDPOINT,
    response_nonce: res.nonce,
    error_detail: { code: grpc.status.INVALID_ARGUMENT, message: 'rejected by test' },
  });
  await client.expectSilence();
  const conn = plane.ads.deltaConnectionList().find((c) => c.proxy?.id === 'delta-6');
  const state = conn?.state.type(ENDPOINT);
  assert.equal(state?.nack?.nonce, res.nonce);
  assert.equal(state?.nack?.message, 'rejected by test');
  assert.equal(state?.nackCount, 1);

  await plane.progress.after(() => plane.ads.requestFullPush());
  await client.expectSilence();
  plane.mock.setEndpoints(A, [endpoint('10.0.0.6', { grpc: 9000 })]);
  const next = await client.next();
  assert.deepEqual(Object.keys(deltaVersions(next)), [CLUSTER_A]);
});

/** name → base64 of the resource bytes, as a SotW response carries them. */
function sotwHeld(res: DecodedResponse): Map<string, string> {
  const names = resourceNames(res);
  return new Map(res.resources.map((r, i) => [names[i] ?? '', Buffer.from(r.value).toString('base64')]));
}

/** What a delta client holds after applying `responses` in order: name → base64 of the bytes. */
function deltaHeld(...responses: DecodedDeltaResponse[]): Map<string, string> {
  const held = new Map<string, string>();
  for (const res of responses) {
    for (const r of res.resources) held.set(r.name, Buffer.from(r.resource.value).toString('base64'));
    for (const name of res.removed_resources) held.delete(name);
  }
  return held;
}

const sorted = (m: Map<string, string>): [string, string][] => [...m].sort(([a], [b]) => a.localeCompare(b));

test('SotW and delta streams are served side by side by one plane, holding the same clusters', async (t) => {
  const plane = await startPlane(t);
  const sotw = new RawAdsClient(plane.address);
  t.after(() => sotw.close());
  const delta = connect(t, plane);
  sotw.send({ node: grpcNode('sotw-7'), type_url: CLUSTER, resource_names: [] });
  delta.send({ node: grpcNode('delta-7'), type_url: CLUSTER });
  const full = await sotw.next();
  const incremental = await delta.next();
  sotw.ack(full);
  delta.ack(incremental);
  assert.deepEqual(
    [...plane.ads.streamCounts()].sort((a, b) => a.api.localeCompare(b.api)),
    [
      { api: 'delta', kind: 'grpc', count: 1 },
      { api: 'sotw', kind: 'grpc', count: 1 },
    ],
  );
  assert.deepEqual([...sotwHeld(full).keys()].sort(), [CLUSTER_A, CLUSTER_B]);
  assert.deepEqual(
    sorted(deltaHeld(incremental)),
    sorted(sotwHeld(full)),
    'the same clusters, byte for byte',
  );

  // One change reaches both: SotW gets the whole new set, delta only what changed; both then hold
  // the same clusters again.
  const C = 'c.mock.internal';
  plane.mock.putService(mockService(C, [servicePort('grpc', 7070)]));
  plane.mock.deleteService(B);
  const fullAfter = (await drain(sotw)).at(-1);
  const incrementalAfter = await drain(delta);
  assert.ok(fullAfter, 'the SotW stream heard of the change');
  assert.deepEqual([...sotwHeld(fullAfter).keys()].sort(), [CLUSTER_A, `outbound|7070||${C}`]);
  assert.deepEqual(
    incrementalAfter.flatMap((r) => [...Object.keys(deltaVersions(r)), ...r.removed_resources]).sort(),
    [CLUSTER_B, `outbound|7070||${C}`],
    'delta names only the new and the removed cluster',
  );
  assert.deepEqual(sorted(deltaHeld(incremental, ...incrementalAfter)), sorted(sotwHeld(fullAfter)));
});

/** Every response that arrives until none has for 300 ms, each ACKed. */
async function drain<R extends { nonce: string }>(client: {
  next(timeoutMs: number): Promise<R>;
  ack(res: R): void;
}): Promise<R[]> {
  const out: R[] = [];
  for (;;) {
    let res: R;
    try {
      res = await client.next(300);
    } catch {
      return out;
    }
    client.ack(res);
    out.push(res);
  }
}
