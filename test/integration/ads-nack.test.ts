// A NACK of each type (CDS, EDS, LDS, RDS), state of the world and delta, on the wire: the NACK is
// recorded (nonce, message, count), the last ACKed version stays the one in force, the rejected
// content is not sent again — not on a full re-evaluation, not on a change elsewhere — and the
// next change of that content is sent (and its ACK clears the NACK).
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { grpcNode, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';
import { deltaVersions, RawDeltaClient } from '../support/raw-delta-client.js';
import type { DeltaStreamState } from '../../xds/protocol/delta-state.js';
import type { StreamState } from '../../xds/protocol/sotw-state.js';

const A = 'a.mock.internal';
const B = 'b.mock.internal';

interface TypeCase {
  readonly type: 'CDS' | 'EDS' | 'LDS' | 'RDS';
  readonly typeUrl: string;
  /** What the client subscribes to: [] is a wildcard subscription (CDS, LDS). */
  readonly names: readonly string[];
  /** Changes this type's content for the subscription; steps 1 and 2 each give new content. */
  change(plane: InProcessPlane, step: 1 | 2): void;
}

const newService = (plane: InProcessPlane, step: number): void =>
  plane.mock.putService(mockService(`new-${step}.mock.internal`, [servicePort('grpc', 7070)]));

const CASES: readonly TypeCase[] = [
  { type: 'CDS', typeUrl: CLUSTER, names: [], change: newService },
  {
    type: 'EDS',
    typeUrl: ENDPOINT,
    names: [`outbound|7070||${A}`],
    change: (plane, step) => plane.mock.setEndpoints(A, [endpoint(`10.0.1.${step}`, { grpc: 9000 })]),
  },
  { type: 'LDS', typeUrl: LISTENER, names: [], change: newService },
  {
    type: 'RDS',
    typeUrl: ROUTE,
    names: [`${A}:7070`],
    // A second port drops the bare-host domain from A:7070's virtual host; removing it brings it back.
    change: (plane, step) =>
      plane.mock.putService(
        mockService(
          A,
          step === 1 ? [servicePort('grpc', 7070), servicePort('grpc2', 7071)] : [servicePort('grpc', 7070)],
        ),
      ),
  },
];

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

/** Nothing this subscription holds depends on B's endpoints. */
const changeElsewhere = (plane: InProcessPlane): void =>
  plane.mock.setEndpoints(B, [endpoint('10.0.0.99', { grpc: 9000 })]);

for (const c of CASES) {
  test(`SotW ${c.type}: a NACK is recorded, the last ACKed version kept, nothing re-sent until the content changes`, async (t) => {
    const plane = await startPlane(t);
    const client = new RawAdsClient(plane.address);
    t.after(() => client.close());
    const node = `nack-sotw-${c.type}`;
    const names = [...c.names];
    client.send({ node: grpcNode(node), type_url: c.typeUrl, resource_names: names });
    const accepted = await client.next();
    client.ack(accepted, names);
    const state = (): ReturnType<StreamState['typeState']> =>
      plane.ads
        .connectionList()
        .find((x) => x.proxy?.id === node)
        ?.state.typeState(c.typeUrl);
    // The ACK must land before the next push, or it answers a stale nonce and is ignored.
    await eventually(() => assert.equal(state()?.ackedVersion, accepted.version_info));

    c.change(plane, 1);
    const rejected = await client.next();
    assert.equal(rejected.type_url, c.typeUrl);
    assert.notEqual(rejected.version_info, accepted.version_info);
    client.send({
      type_url: c.typeUrl,
      version_info: accepted.version_info, // a NACK carries the last version the client accepted
      response_nonce: rejected.nonce,
      resource_names: names,
      error_detail: { code: grpc.status.INVALID_ARGUMENT, message: `${c.type} rejected by test` },
    });
    await client.expectSilence();
    assert.equal(state()?.nack?.version, rejected.version_info);
    assert.equal(state()?.nack?.nonce, rejected.nonce);
    assert.equal(state()?.nack?.message, `${c.type} rejected by test`);
    assert.equal(state()?.nackCount, 1);
    assert.equal(state()?.ackedVersion, accepted.version_info, 'the last ACKed version is kept');

    await plane.progress.after(() => plane.ads.requestFullPush());
    await client.expectSilence();
    await plane.progress.after(() => changeElsewhere(plane));
    await client.expectSilence();

    c.change(plane, 2);
    const next = await client.next();
    assert.equal(next.type_url, c.typeUrl);
    assert.notEqual(next.version_info, rejected.version_info);
    client.ack(next, names);
    await eventually(() => {
      assert.equal(state()?.nack, undefined);
      assert.equal(state()?.ackedVersion, next.version_info);
    });
    assert.equal(state()?.nackCount, 1);
  });
}

for (const c of CASES) {
  test(`delta ${c.type}: a NACK is recorded, the last ACK kept, nothing re-sent until the content changes`, async (t) => {
    const plane = await startPlane(t);
    const client = new RawDeltaClient(plane.address);
    t.after(() => client.close());
    const node = `nack-delta-${c.type}`;
    client.send({ node: grpcNode(node), type_url: c.typeUrl, resource_names_subscribe: [...c.names] });
    const accepted = await client.next();
    client.ack(accepted);
    const state = (): ReturnType<DeltaStreamState['type']> =>
      plane.ads
        .deltaConnectionList()
        .find((x) => x.proxy?.id === node)
        ?.state.type(c.typeUrl);
    await eventually(() => assert.equal(state()?.ackedNonce, accepted.nonce));

    c.change(plane, 1);
    const rejected = await client.next();
    assert.equal(rejected.type_url, c.typeUrl);
    assert.ok(rejected.resources.length > 0);
    client.send({
      type_url: c.typeUrl,
      response_nonce: rejected.nonce,
      error_detail: { code: grpc.status.INVALID_ARGUMENT, message: `${c.type} rejected by test` },
    });
    await client.expectSilence();
    assert.equal(state()?.nack?.nonce, rejected.nonce);
    assert.equal(state()?.nack?.message, `${c.type} rejected by test`);
    assert.equal(state()?.nackCount, 1);
    assert.equal(state()?.ackedNonce, accepted.nonce, 'the last ACK is kept');

    await plane.progress.after(() => plane.ads.requestFullPush());
    await client.expectSilence();
    await plane.progress.after(() => changeElsewhere(plane));
    await client.expectSilence();

    c.change(plane, 2);
    const next = await client.next();
    assert.equal(next.type_url, c.typeUrl);
    const rejectedVersions = deltaVersions(rejected);
    for (const r of next.resources)
      assert.notEqual(r.version, rejectedVersions[r.name], `${r.name} is sent again only with new content`);
    client.ack(next);
    await eventually(() => {
      assert.equal(state()?.nack, undefined);
      assert.equal(state()?.ackedNonce, next.nonce);
    });
  });
}

test('SotW: a NACK of one type leaves the other types of the stream as they were', async (t) => {
  const plane = await startPlane(t);
  const client = new RawAdsClient(plane.address);
  t.after(() => client.close());
  client.send({ node: grpcNode('nack-sotw-two'), type_url: CLUSTER, resource_names: [] });
  const cds = await client.next();
  client.ack(cds);
  client.send({ type_url: ENDPOINT, resource_names: [`outbound|7070||${A}`] });
  const eds = await client.next();
  client.ack(eds, [`outbound|7070||${A}`]);
  const state = () => plane.ads.connectionList().find((x) => x.proxy?.id === 'nack-sotw-two')?.state;
  await eventually(() => assert.equal(state()?.typeState(CLUSTER)?.ackedVersion, cds.version_info));
  newService(plane, 1);
  const rejected = await client.next();
  assert.equal(rejected.type_url, CLUSTER);
  client.send({
    type_url: CLUSTER,
    version_info: cds.version_info,
    response_nonce: rejected.nonce,
    error_detail: { code: grpc.status.INVALID_ARGUMENT, message: 'CDS rejected by test' },
  });
  // EDS still follows its own changes.
  plane.mock.setEndpoints(A, [endpoint('10.0.1.7', { grpc: 9000 })]);
  const push = await client.next();
  assert.equal(push.type_url, ENDPOINT);
  assert.deepEqual(resourceNames(push), [`outbound|7070||${A}`]);
  assert.equal(state()?.typeState(ENDPOINT)?.nack, undefined);
  assert.equal(state()?.typeState(CLUSTER)?.nack?.nonce, rejected.nonce);
  assert.equal(state()?.typeState(CLUSTER)?.ackedVersion, cds.version_info);
});
