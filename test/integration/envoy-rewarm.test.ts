// Envoy re-warms a cluster whenever CDS updates it, and the cluster stays warming (out of use)
// until its load assignment arrives again: after a CDS update of a cluster, its EDS must be sent
// again even though its endpoints did not change. On the wire, SotW and delta, with an Envoy node.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { RawAdsClient, resourceNames, type DecodedResponse } from '../support/raw-ads-client.js';
import { RawDeltaClient, type DecodedDeltaResponse } from '../support/raw-delta-client.js';

const WEB = 'web.mesh.internal';
const DB = 'db.mesh.internal';
const WEB_CLUSTER = `outbound|8080||${WEB}`;
const DB_CLUSTER = `outbound|5432||${DB}`;

const envoyNode = (id: string): object => ({ id, cluster: 'web', user_agent_name: 'envoy' });

async function startPlane(t: TestContext): Promise<InProcessPlane> {
  const plane = await startInProcessPlane();
  t.after(() => plane.stop());
  plane.mock.putService(mockService(WEB, [servicePort('http', 8080, 'HTTP')]));
  plane.mock.putService(mockService(DB, [servicePort('pg', 5432, 'TCP')]));
  plane.mock.setEndpoints(WEB, [endpoint('10.0.0.1', { http: 8080 }), endpoint('10.0.0.2', { http: 8080 })]);
  plane.mock.setEndpoints(DB, [endpoint('10.0.0.3', { pg: 5432 })]);
  return plane;
}

/** WEB's port becomes HTTP2: its cluster changes (HTTP/2 upstream options), its endpoints do not. */
function upgradeWebToHttp2(plane: InProcessPlane): void {
  plane.mock.putService(mockService(WEB, [servicePort('http', 8080, 'HTTP2')]));
}

/** Every response until none arrives for 300 ms, each ACKed. */
async function drain<R>(next: (ms: number) => Promise<R>, ack: (res: R) => void): Promise<R[]> {
  const out: R[] = [];
  for (;;) {
    let res: R;
    try {
      res = await next(300);
    } catch {
      return out;
    }
    ack(res);
    out.push(res);
  }
}

const bytesOf = (value: Uint8Array | undefined): string =>
  value ? Buffer.from(value).toString('base64') : '';

test('SotW: after CDS updates a cluster, its unchanged load assignment is sent again, and no other', async (t) => {
  const plane = await startPlane(t);
  const client = new RawAdsClient(plane.address);
  t.after(() => client.close());
  client.send({ node: envoyNode('rewarm-sotw'), type_url: CLUSTER, resource_names: [] });
  const cds = await client.next();
  client.ack(cds);
  client.send({ type_url: ENDPOINT, resource_names: [DB_CLUSTER, WEB_CLUSTER] });
  const eds = await client.next();
  client.ack(eds, [DB_CLUSTER, WEB_CLUSTER]);
  const before = new Map(resourceNames(eds).map((n, i) => [n, bytesOf(eds.resources[i]?.value)]));

  upgradeWebToHttp2(plane);
  const after = await drain(
    (ms) => client.next(ms),
    (res: DecodedResponse) => client.ack(res, res.type_url === ENDPOINT ? [DB_CLUSTER, WEB_CLUSTER] : []),
  );
  assert.deepEqual(
    after.map((r) => r.type_url),
    [CLUSTER, ENDPOINT],
    'CDS, then EDS',
  );
  const [cdsUpdate, edsAgain] = after as [DecodedResponse, DecodedResponse];
  const webBefore = cds.resources[resourceNames(cds).indexOf(WEB_CLUSTER)];
  const webAfter = cdsUpdate.resources[resourceNames(cdsUpdate).indexOf(WEB_CLUSTER)];
  assert.notEqual(bytesOf(webAfter?.value), bytesOf(webBefore?.value), 'the cluster changed');
  assert.deepEqual(resourceNames(edsAgain), [WEB_CLUSTER], "the updated cluster's load assignment, not DB's");
  assert.equal(bytesOf(edsAgain.resources[0]?.value), before.get(WEB_CLUSTER), 'byte for byte the same');
});

test('delta: after CDS updates a cluster, its unchanged load assignment is sent again, and no other', async (t) => {
  const plane = await startPlane(t);
  const client = new RawDeltaClient(plane.address);
  t.after(() => client.close());
  client.send({ node: envoyNode('rewarm-delta'), type_url: CLUSTER });
  client.ack(await client.next());
  client.send({ type_url: ENDPOINT, resource_names_subscribe: [DB_CLUSTER, WEB_CLUSTER] });
  const eds = await client.next();
  client.ack(eds);
  const before = new Map(eds.resources.map((r) => [r.name, r.version]));

  upgradeWebToHttp2(plane);
  const after = await drain(
    (ms) => client.next(ms),
    (res: DecodedDeltaResponse) => client.ack(res),
  );
  assert.deepEqual(
    after.map((r) => [r.type_url, r.resources.map((x) => x.name)]),
    [
      [CLUSTER, [WEB_CLUSTER]],
      [ENDPOINT, [WEB_CLUSTER]],
    ],
    "CDS with the updated cluster, then that cluster's EDS (not DB's)",
  );
  assert.equal(
    after[1]?.resources[0]?.version,
    before.get(WEB_CLUSTER),
    'the same version: nothing changed in it',
  );
});
