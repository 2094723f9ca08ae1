// An Envoy sidecar on the ADS wire: a raw client with an Envoy node subscribes the way Envoy does
// (CDS and LDS wildcard, then the EDS and RDS names they reference), ACKs every response, never sees
// a reference to a resource it has not been sent, and gets EDS alone when only endpoints change.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envoyConfigDump } from '../../xds/server/envoy-config-dump.js';
import { decodeAny } from '../../xds/proto/protos.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { checkConsistency } from '../../xds/validate/consistency.js';
import { validateEncoded } from '../../xds/validate/pgv-validator.js';
import { startInProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { RawAdsClient, resourceNames, type DecodedResponse } from '../support/raw-ads-client.js';
import type { EncodedResource } from '../../xds/proto/resource.js';

const WEB = 'web.mesh.internal';
const DB = 'db.mesh.internal';

function envoyNode(id: string, metadata: Record<string, string>): object {
  return {
    id,
    cluster: 'web',
    user_agent_name: 'envoy',
    metadata: {
      fields: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, { stringValue: v }])),
    },
  };
}

/** Everything a response references that must already be present: RDS names, clusters. */
function references(res: DecodedResponse): { routes: string[]; clusters: string[] } {
  const routes: string[] = [];
  const clusters: string[] = [];
  const walk = (v: unknown, key = ''): void => {
    if (Array.isArray(v)) v.forEach((x) => walk(x, key));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
    else if (typeof v === 'string' && key === 'route_config_name') routes.push(v);
    else if (typeof v === 'string' && key === 'cluster') clusters.push(v);
  };
  for (const r of res.resources) walk(decodeAny(r.type_url, r.value));
  return { routes, clusters };
}

function asEncoded(res: DecodedResponse): EncodedResource[] {
  return res.resources.map((r) => {
    const d = decodeAny(r.type_url, r.value) as { name?: string; cluster_name?: string };
    return { name: d.name ?? d.cluster_name ?? '', typeUrl: r.type_url, value: r.value, version: '' };
  });
}

test('an Envoy sidecar gets CDS, EDS, LDS, RDS consistently, ACKs each, and EDS alone on an endpoint change', async (t) => {
  const plane = await startInProcessPlane();
  t.after(() => plane.stop());
  plane.mock.putService(mockService(WEB, [servicePort('http', 8080, 'HTTP')]));
  plane.mock.putService(mockService(DB, [servicePort('pg', 5432, 'TCP')], { addresses: ['127.0.10.20'] }));
  plane.mock.setEndpoints(WEB, [
    endpoint('127.0.0.1', { http: 8080 }),
    endpoint('127.0.0.2', { http: 8080 }),
  ]);
  plane.mock.setEndpoints(DB, [endpoint('127.0.0.3', { pg: 5432 })]);

  const client = new RawAdsClient(plane.address);
  t.after(() => client.close());
  const node = envoyNode('sidecar~127.0.0.1~web-1~default.svc', { INTERCEPTION_MODE: 'REDIRECT' });
  const held = new Map<string, DecodedResponse>();
  const names = (typeUrl: string): Set<string> =>
    new Set(held.has(typeUrl) ? resourceNames(held.get(typeUrl) as DecodedResponse) : []);

  // 1. CDS wildcard.
  client.send({ node, type_url: CLUSTER, resource_names: [] });
  const cds = await client.next();
  assert.equal(cds.type_url, CLUSTER);
  held.set(CLUSTER, cds);
  const edsNames = resourceNames(cds).filter((n) => n.startsWith('outbound|'));
  assert.deepEqual(edsNames.sort(), [`outbound|5432||${DB}`, `outbound|8080||${WEB}`]);
  // 2. EDS for the clusters just received, then the CDS ACK (Envoy's order).
  client.send({ type_url: ENDPOINT, resource_names: edsNames });
  client.ack(cds);
  const eds = await client.next();
  assert.equal(eds.type_url, ENDPOINT);
  assert.deepEqual(resourceNames(eds).sort(), edsNames.sort());
  held.set(ENDPOINT, eds);
  client.ack(eds, edsNames);
  // 3. LDS wildcard: every cluster a listener names was already sent.
  client.send({ type_url: LISTENER, resource_names: [] });
  const lds = await client.next();
  assert.equal(lds.type_url, LISTENER);
  held.set(LISTENER, lds);
  for (const c of references(lds).clusters)
    assert.ok(names(CLUSTER).has(c), `listener names unsent cluster ${c}`);
  const rdsNames = [...new Set(references(lds).routes)];
  assert.ok(rdsNames.includes('8080'));
  // 4. RDS for the listeners' route names; its clusters were all sent.
  client.send({ type_url: ROUTE, resource_names: rdsNames });
  client.ack(lds);
  const rds = await client.next();
  assert.equal(rds.type_url, ROUTE);
  held.set(ROUTE, rds);
  assert.deepEqual(resourceNames(rds).sort(), rdsNames.sort());
  for (const c of references(rds).clusters)
    assert.ok(names(CLUSTER).has(c), `route names unsent cluster ${c}`);
  client.ack(rds, rdsNames);
  await client.expectSilence(); // every ACK accepted, nothing re-sent

  // What it holds passes Envoy's rules and the consistency check.
  const all = new Map([...held].map(([type, res]) => [type, asEncoded(res)] as const));
  assert.deepEqual(checkConsistency(all), []);
  for (const [type, rs] of all)
    for (const r of rs)
      assert.deepEqual(validateEncoded(type.slice(type.lastIndexOf('/') + 1), r.value), [], r.name);

  // /debug/config_dump for an Envoy: Envoy's ConfigDump shape with what was sent.
  const conn = plane.ads.connectionList().find((c) => c.proxy?.kind === 'envoy') ?? assert.fail('connection');
  const dump = envoyConfigDump(conn).configs;
  assert.deepEqual(
    dump.map((d) => d['@type']),
    ['Clusters', 'Endpoints', 'Listeners', 'Routes'].map(
      (k) => `type.googleapis.com/envoy.admin.v3.${k}ConfigDump`,
    ),
  );
  const dumped = dump[2]?.dynamic_listeners as {
    name: string;
    active_state: { listener: { '@type': string } };
  }[];
  assert.ok(
    dumped.some((l) => l.name === 'virtualOutbound' && l.active_state.listener['@type'].endsWith('Listener')),
  );
  const dumpedClusters = dump[0]?.dynamic_active_clusters as { cluster: { name: string } }[];
  assert.ok(dumpedClusters.some((c) => c.cluster.name === `outbound|8080||${WEB}`));

  // 5. An endpoint change: EDS alone.
  plane.mock.setEndpoints(WEB, [
    endpoint('127.0.0.1', { http: 8080 }),
    endpoint('127.0.0.4', { http: 8080 }),
  ]);
  const update = await client.next();
  assert.equal(update.type_url, ENDPOINT);
  const cla = update.resources
    .map(
      (r) =>
        decodeAny(r.type_url, r.value) as {
          cluster_name: string;
          endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string } } } }[] }[];
        },
    )
    .find((r) => r.cluster_name === `outbound|8080||${WEB}`);
  assert.deepEqual(
    cla?.endpoints
      .flatMap((l) => l.lb_endpoints.map((e) => e.endpoint.address.socket_address.address))
      .sort(),
    ['127.0.0.1', '127.0.0.4'],
  );
  client.ack(update, edsNames);
  await client.expectSilence();
});

test('an Envoy node with malformed metadata is refused with INVALID_ARGUMENT; other streams go on', async (t) => {
  const plane = await startInProcessPlane();
  t.after(() => plane.stop());
  plane.mock.putService(mockService(WEB, [servicePort('http', 8080, 'HTTP')]));
  const bad = new RawAdsClient(plane.address);
  const good = new RawAdsClient(plane.address);
  t.after(() => {
    bad.close();
    good.close();
  });
  good.send({ node: envoyNode('vm-good', { PORTOLAN_UPSTREAMS: `${WEB}:8080=18080` }), type_url: LISTENER });
  const first = await good.next();
  assert.deepEqual(resourceNames(first), ['127.0.0.1_18080']);
  bad.send({ node: envoyNode('vm-bad', { PORTOLAN_UPSTREAMS: 'not an upstream' }), type_url: LISTENER });
  const status = await bad.status();
  assert.equal(status.code, 3); // INVALID_ARGUMENT
  assert.match(status.details, /PORTOLAN_UPSTREAMS/);
  good.ack(first);
  // The good stream is still served: a new upstream service gives it its second listener.
  await plane.progress.after(() => plane.mock.putService(mockService(DB, [servicePort('pg', 5432, 'TCP')])));
  await good.expectSilence(); // DB is not among its upstreams: its listeners did not change
});

test('sidecars of one namespace on different VMs each get the inbound clusters of their own VM', async (t) => {
  const plane = await startInProcessPlane();
  t.after(() => plane.stop());
  plane.mock.putService(mockService(WEB, [servicePort('http', 8080, 'HTTP')]));
  plane.mock.putService(mockService(DB, [servicePort('pg', 5432, 'TCP')]));
  plane.mock.setEndpoints(WEB, [endpoint('127.0.0.1', { http: 8080 })]);
  plane.mock.setEndpoints(DB, [endpoint('127.0.0.3', { pg: 5432 })]);
  const inbound = async (node: object): Promise<string[]> => {
    const client = new RawAdsClient(plane.address);
    t.after(() => client.close());
    client.send({ node, type_url: CLUSTER, resource_names: [] });
    return resourceNames(await client.next())
      .filter((n) => n.startsWith('inbound|') && n.endsWith('||'))
      .sort();
  };
  // Same namespace and settings: only the VM (the IP in the node id) differs.
  assert.deepEqual(await inbound(envoyNode('sidecar~127.0.0.1~web-1~default.svc', {})), ['inbound|8080||']);
  assert.deepEqual(await inbound(envoyNode('sidecar~127.0.0.3~db-1~default.svc', {})), ['inbound|5432||']);
});
