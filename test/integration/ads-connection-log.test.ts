// The proxy history (the connection log observer): every stream, SotW and delta alike, is recorded
// once its node is known, and its disconnect with the last ACK and NACK of each type.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { MockRegistry } from '../../adapters/mock/registry.js';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';
import type { ConnectionLog } from '../../xds/server/connection-log.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { grpcNode, RawAdsClient } from '../support/raw-ads-client.js';
import { RawDeltaClient } from '../support/raw-delta-client.js';

const HOST = 'log.mock.internal';
const CLUSTER_NAME = `outbound|7070||${HOST}`;

interface Row {
  readonly nodeId: string;
  readonly peer: string;
  readonly kind: string;
  disconnected?: { acks: Record<string, unknown>; nacks: Record<string, unknown> };
}

/** A ConnectionLog in memory, shaped like the store's proxy table. */
class RecordingLog implements ConnectionLog {
  readonly rows: Row[] = [];
  connected(nodeId: string, peer: string, kind: string): number {
    return this.rows.push({ nodeId, peer, kind }) - 1;
  }
  disconnected(id: number, acks: Record<string, unknown>, nacks: Record<string, unknown>): void {
    const row = this.rows[id];
    assert.ok(row, `disconnect of unknown row ${id}`);
    row.disconnected = { acks, nacks };
  }
}

async function startPlane(t: TestContext, log: ConnectionLog): Promise<InProcessPlane> {
  const mock = new MockRegistry();
  mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
  mock.setEndpoints(HOST, [endpoint('10.0.0.1', { grpc: 9000 })]);
  const plane = await startInProcessPlane({ mock, connectionLog: log });
  t.after(() => plane.stop());
  return plane;
}

/** One client per variant: subscribe to CDS and EDS, ACK the CDS response, NACK the EDS one. */
const variants = {
  async sotw(address: string, nodeId: string) {
    const client = new RawAdsClient(address);
    client.send({ node: grpcNode(nodeId), type_url: CLUSTER });
    const cds = await client.next();
    client.ack(cds);
    client.send({ type_url: ENDPOINT, resource_names: [CLUSTER_NAME] });
    const eds = await client.next();
    client.send({
      type_url: ENDPOINT,
      version_info: '',
      response_nonce: eds.nonce,
      resource_names: [CLUSTER_NAME],
      error_detail: { code: 3, message: 'rejected by test' },
    });
    return { client, ackedCds: cds.version_info, nacked: { version: eds.version_info, nonce: eds.nonce } };
  },
  async delta(address: string, nodeId: string) {
    const client = new RawDeltaClient(address);
    client.send({ node: grpcNode(nodeId), type_url: CLUSTER });
    const cds = await client.next();
    client.ack(cds);
    client.send({ type_url: ENDPOINT, resource_names_subscribe: [CLUSTER_NAME] });
    const eds = await client.next();
    client.send({
      type_url: ENDPOINT,
      response_nonce: eds.nonce,
      error_detail: { code: 3, message: 'rejected by test' },
    });
    // Delta identifies a response by its nonce alone.
    return { client, ackedCds: cds.nonce, nacked: { version: eds.nonce, nonce: eds.nonce } };
  },
};

for (const [api, open] of Object.entries(variants)) {
  test(`a ${api} stream is recorded connected, then disconnected with its last ACK and NACK per type`, async (t) => {
    const log = new RecordingLog();
    const plane = await startPlane(t, log);
    const nodeId = `log-${api}`;
    const { client, ackedCds, nacked } = await open(plane.address, nodeId);
    const stream = plane.ads.findStream(nodeId) ?? assert.fail('the stream is open');
    assert.equal(stream.api, api);
    // The ACK and the NACK have been read before the client goes.
    await eventually(() => {
      const status = new Map(stream.typeStatus().map((s) => [s.typeUrl, s]));
      assert.equal(status.get(CLUSTER)?.acked?.version, ackedCds);
      assert.equal(status.get(ENDPOINT)?.nack?.nonce, nacked.nonce);
    });
    await eventually(() =>
      assert.deepEqual(log.rows, [{ nodeId, peer: stream.peer, kind: 'grpc' }], 'connected once, as grpc'),
    );

    client.close();
    const row = await eventually(() => {
      const r = log.rows[0];
      assert.ok(r?.disconnected, 'the disconnect is recorded');
      return r.disconnected;
    });
    assert.deepEqual(Object.keys(row.acks), ['CDS']);
    assert.equal((row.acks.CDS as { version: string }).version, ackedCds);
    assert.match((row.acks.CDS as { at: string }).at, /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(Object.keys(row.nacks), ['EDS']);
    assert.deepEqual(
      { ...(row.nacks.EDS as Record<string, unknown>), at: undefined },
      { ...nacked, code: 3, message: 'rejected by test', at: undefined },
    );
    assert.equal(log.rows.length, 1, 'one connection, one row');
  });
}

test('a stream is recorded with the time it started, not the time its record was written', async (t) => {
  const times: { connectedAt?: string; disconnectedAt?: string } = {};
  const log: ConnectionLog = {
    connected: (_node, _peer, _kind, at) => {
      times.connectedAt = at;
      return 1;
    },
    disconnected: (_id, _acks, _nacks, at) => {
      times.disconnectedAt = at;
    },
  };
  const plane = await startPlane(t, log);
  const client = new RawAdsClient(plane.address);
  client.send({ node: grpcNode('short-lived'), type_url: CLUSTER });
  await client.next();
  const started = plane.ads.findStream('short-lived')?.connectedAt;
  client.close(); // before the batched write (every 500 ms): start and end are written together
  const ended = await eventually(() => times.disconnectedAt ?? false);
  assert.equal(times.connectedAt, started);
  assert.ok(ended >= (started ?? ''), `ended ${ended} before it started ${started}`);
});
