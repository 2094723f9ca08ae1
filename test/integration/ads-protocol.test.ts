// The ADS protocol on the wire: a raw StreamAggregatedResources client over loopback against the
// in-process plane (mock registry → aggregate → ADS), asserting the exact sequence of responses.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import {
  lbAddresses,
  type DecodedCluster,
  type DecodedListener,
  type DecodedLoadAssignment,
  type DecodedRouteConfiguration,
} from '../support/decoded-xds.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { StubRegistry } from '../support/stub-registry.js';
import {
  decodedResources,
  grpcNode,
  RawAdsClient,
  resourceNames,
  type DecodedResponse,
} from '../support/raw-ads-client.js';

const HOST = 'echo.mock.internal';
const OTHER = 'other.mock.internal';
const GRPC_CLUSTER = `outbound|7070||${HOST}`;
const HTTP_CLUSTER = `outbound|8080||${HOST}`;
const HCM_TYPE =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const ROUTER_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router';

/** A plane serving HOST with ports 7070 (grpc) and 8080 (http) and two endpoints in two localities. */
async function startPlane(t: TestContext): Promise<InProcessPlane> {
  const plane = await startInProcessPlane();
  t.after(() => plane.stop());
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 7070), servicePort('http', 8080, 'HTTP')]));
  plane.mock.setEndpoints(HOST, [
    endpoint('10.0.0.1', { grpc: 9000, http: 9080 }, { locality: { region: 'r1', zone: 'z1', subzone: '' } }),
    endpoint(
      '10.0.0.2',
      { grpc: 9000, http: 9080 },
      { locality: { region: 'r2', zone: 'z1', subzone: '' }, weight: 2 },
    ),
  ]);
  return plane;
}

function connect(t: TestContext, address: string): RawAdsClient {
  const client = new RawAdsClient(address);
  t.after(() => client.close());
  return client;
}

/** Sends a first request for `typeUrl` and returns the response after checking it answers that type. */
async function subscribe(
  client: RawAdsClient,
  typeUrl: string,
  names: string[] = [],
  nodeId?: string,
): Promise<DecodedResponse> {
  client.send({ ...(nodeId && { node: grpcNode(nodeId) }), type_url: typeUrl, resource_names: names });
  const res = await client.next();
  assert.equal(res.type_url, typeUrl);
  return res;
}

/** Subscribes and ACKs, returning the ACKed response. */
async function subscribeAndAck(
  client: RawAdsClient,
  typeUrl: string,
  names: string[] = [],
  nodeId?: string,
): Promise<DecodedResponse> {
  const res = await subscribe(client, typeUrl, names, nodeId);
  client.ack(res, names);
  return res;
}

function connection(plane: InProcessPlane, nodeId: string) {
  const conn = plane.ads.connectionList().find((c) => c.proxy?.id === nodeId);
  assert.ok(conn, `a connection for ${nodeId}`);
  return conn;
}

test('CDS wildcard: the first response lists outbound|PORT||HOST for every service port', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const res = await subscribe(client, CLUSTER, [], 'cds-1');
  assert.ok(res.nonce, 'a nonce');
  assert.ok(res.version_info, 'a version');
  assert.deepEqual(resourceNames(res).sort(), [GRPC_CLUSTER, HTTP_CLUSTER]);
  assert.ok(res.resources.every((r) => r.type_url === CLUSTER));
  await client.expectSilence();
});

test('an ACK is recorded and not answered', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const res = await subscribeAndAck(client, CLUSTER, [], 'ack-1');
  await client.expectSilence();
  assert.equal(connection(plane, 'ack-1').state.typeState(CLUSTER)?.ackedVersion, res.version_info);
});

test('an endpoint change pushes EDS alone, with a new nonce and version', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const cds = await subscribeAndAck(client, CLUSTER, [], 'eds-push');
  const lds = await subscribeAndAck(client, LISTENER, [`${HOST}:7070`]);
  const eds = await subscribeAndAck(client, ENDPOINT, [GRPC_CLUSTER]);
  await client.expectSilence();

  plane.mock.putEndpoint(HOST, endpoint('10.0.0.3', { grpc: 9000 }));
  const push = await client.next();
  assert.equal(push.type_url, ENDPOINT);
  assert.ok(![cds.nonce, lds.nonce, eds.nonce].includes(push.nonce), 'a new nonce');
  assert.notEqual(push.version_info, eds.version_info, 'a new version');
  const addresses = lbAddresses(decodedResources<DecodedLoadAssignment>(push)[0]);
  assert.deepEqual(addresses.sort(), ['10.0.0.1', '10.0.0.2', '10.0.0.3']);
  await client.expectSilence(); // no CDS or LDS resend
});

test('a service change pushes CDS, and not an unchanged EDS', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const cds = await subscribeAndAck(client, CLUSTER, [], 'cds-push');
  await subscribeAndAck(client, ENDPOINT, [GRPC_CLUSTER]);
  await client.expectSilence();

  plane.mock.putService(mockService(OTHER, [servicePort('grpc', 7070)]));
  const push = await client.next();
  assert.equal(push.type_url, CLUSTER);
  assert.notEqual(push.nonce, cds.nonce);
  assert.notEqual(push.version_info, cds.version_info);
  assert.deepEqual(
    resourceNames(push).sort(),
    [GRPC_CLUSTER, HTTP_CLUSTER, `outbound|7070||${OTHER}`].sort(),
  );
  await client.expectSilence();
});

test('an endpoint change of a DNS service re-sends its LOGICAL_DNS cluster, which embeds the endpoint', async (t) => {
  const plane = await startPlane(t);
  const DNS_HOST = 'dns.mock.internal';
  const DNS_CLUSTER = `outbound|443||${DNS_HOST}`;
  plane.mock.putService(mockService(DNS_HOST, [servicePort('https', 443, 'HTTPS')], { resolution: 'DNS' }));
  plane.mock.setEndpoints(DNS_HOST, [endpoint('old.example.com', { https: 443 })]);
  const client = connect(t, plane.address);
  const cds = await subscribeAndAck(client, CLUSTER, [], 'dns-1');
  const dnsAddress = (res: DecodedResponse): string[] =>
    lbAddresses(decodedResources<DecodedCluster>(res).find((c) => c.name === DNS_CLUSTER)?.load_assignment);
  assert.deepEqual(dnsAddress(cds), ['old.example.com']);

  plane.mock.setEndpoints(DNS_HOST, [endpoint('new.example.com', { https: 443 })]);
  const push = await client.next();
  assert.equal(push.type_url, CLUSTER);
  assert.notEqual(push.version_info, cds.version_info);
  assert.deepEqual(dnsAddress(push), ['new.example.com']);
  await client.expectSilence();
});

test('a NACK is recorded and the rejected version is not resent until the config changes', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const rejected = await subscribe(client, CLUSTER, [], 'nack-1');
  client.send({
    type_url: CLUSTER,
    version_info: '',
    response_nonce: rejected.nonce,
    error_detail: { code: grpc.status.INVALID_ARGUMENT, message: 'cluster rejected by test' },
  });
  await client.expectSilence();
  const state = connection(plane, 'nack-1').state.typeState(CLUSTER);
  assert.equal(state?.nack?.message, 'cluster rejected by test');
  assert.equal(state?.nack?.version, rejected.version_info);
  assert.equal(state?.nack?.nonce, rejected.nonce);
  assert.equal(state?.nackCount, 1);
  assert.equal(state?.ackedVersion, undefined);

  // Re-evaluates everything: the same (rejected) CDS version stays unsent.
  await plane.progress.after(() => plane.ads.requestFullPush());
  await client.expectSilence();

  plane.mock.putService(mockService(OTHER, [servicePort('grpc', 7070)]));
  const next = await client.next();
  assert.equal(next.type_url, CLUSTER);
  assert.notEqual(next.version_info, rejected.version_info);
  assert.notEqual(next.nonce, rejected.nonce);
  assert.ok(resourceNames(next).includes(`outbound|7070||${OTHER}`));
});

test('a request with a stale nonce is ignored, subscription change included', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const first = await subscribeAndAck(client, CLUSTER, [], 'stale-1');
  plane.mock.putService(mockService(OTHER, [servicePort('grpc', 7070)]));
  const second = await client.next();
  assert.equal(second.type_url, CLUSTER);

  // Answers the first response after the second went out, and tries to narrow the subscription.
  client.send({
    type_url: CLUSTER,
    version_info: first.version_info,
    response_nonce: first.nonce,
    resource_names: [GRPC_CLUSTER],
  });
  await client.expectSilence();
  const state = connection(plane, 'stale-1').state.typeState(CLUSTER);
  assert.equal(state?.wildcard, true);
  assert.deepEqual([...(state?.names ?? [])], []);
  assert.equal(state?.sent?.nonce, second.nonce);
});

const refusals: { rule: string; requests: object[]; details: RegExp }[] = [
  { rule: 'a first request without node', requests: [{ type_url: CLUSTER }], details: /must carry node/ },
  {
    rule: 'a node without id',
    requests: [{ node: { cluster: 'c' }, type_url: CLUSTER }],
    details: /node\.id is required/,
  },
  {
    rule: 'a first request without type_url',
    requests: [{ node: grpcNode('no-type') }],
    details: /type_url is required/,
  },
  {
    rule: 'a later request without type_url',
    requests: [{ node: grpcNode('no-type-later'), type_url: CLUSTER }, { response_nonce: '1' }],
    details: /type_url is required/,
  },
];
for (const c of refusals) {
  test(`${c.rule} ends the stream with INVALID_ARGUMENT`, async (t) => {
    const plane = await startPlane(t);
    const client = connect(t, plane.address);
    for (const r of c.requests) client.send(r);
    const status = await client.status();
    assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
    assert.match(status.details, c.details);
    assert.deepEqual(plane.ads.connectionList(), [], 'the connection is gone');
  });
}

test('a malformed request ends only its own stream; another stream keeps working and gets pushes', async (t) => {
  const plane = await startPlane(t);
  const good = connect(t, plane.address);
  const bad = connect(t, plane.address);
  const cds = await subscribeAndAck(good, CLUSTER, [], 'good');
  await subscribeAndAck(bad, CLUSTER, [], 'bad');

  bad.sendBytes(Buffer.from([0x0f, 0xff, 0xff, 0xff, 0x01])); // field 1 with wire type 7: not protobuf
  const status = await bad.status();
  assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
  assert.deepEqual(
    plane.ads.connectionList().map((c) => c.proxy?.id),
    ['good'],
  );

  plane.mock.putService(mockService(OTHER, [servicePort('grpc', 7070)]));
  const push = await good.next();
  assert.equal(push.type_url, CLUSTER);
  assert.notEqual(push.version_info, cds.version_info);
  const eds = await subscribe(good, ENDPOINT, [`outbound|7070||${OTHER}`]);
  assert.deepEqual(resourceNames(eds), [`outbound|7070||${OTHER}`]);
});

test('LDS HOST:PORT returns an api_listener HCM with RDS over ADS and the router filter last', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const res = await subscribe(client, LISTENER, [`${HOST}:7070`], 'lds-1');
  const [listener, ...rest] = decodedResources<DecodedListener>(res);
  assert.equal(rest.length, 0);
  assert.equal(listener?.name, `${HOST}:7070`);
  const hcm = listener?.api_listener?.api_listener;
  assert.equal(hcm?.['@type'], HCM_TYPE);
  assert.equal(hcm?.rds?.route_config_name, `${HOST}:7070`);
  assert.deepEqual(hcm?.rds?.config_source?.ads, {});
  const filters = hcm?.http_filters ?? [];
  assert.ok(filters.length >= 1);
  assert.equal(filters.at(-1)?.name, 'envoy.filters.http.router');
  assert.equal(filters.at(-1)?.typed_config?.['@type'], ROUTER_TYPE);
});

test('RDS HOST:PORT returns a virtual host for HOST:PORT routing to outbound|PORT||HOST', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const res = await subscribe(client, ROUTE, [`${HOST}:8080`], 'rds-1');
  const [rc] = decodedResources<DecodedRouteConfiguration>(res);
  assert.equal(rc?.name, `${HOST}:8080`);
  const vhosts = rc?.virtual_hosts ?? [];
  assert.equal(vhosts.length, 1);
  assert.ok(vhosts[0]?.domains?.includes(`${HOST}:8080`));
  assert.deepEqual(
    (vhosts[0]?.routes ?? []).map((r) => r.route?.cluster),
    [HTTP_CLUSTER],
  );
});

test('EDS returns weighted locality groups with each endpoint health status', async (t) => {
  const plane = await startPlane(t);
  plane.mock.setEndpoints(HOST, [
    endpoint(
      '10.0.0.1',
      { grpc: 9000 },
      { locality: { region: 'r1', zone: 'z1', subzone: '' }, health: 'HEALTHY' },
    ),
    endpoint(
      '10.0.0.2',
      { grpc: 9000 },
      { locality: { region: 'r1', zone: 'z1', subzone: '' }, health: 'UNHEALTHY', weight: 2 },
    ),
    endpoint(
      '10.0.0.3',
      { grpc: 9000 },
      { locality: { region: 'r2', zone: 'z1', subzone: '' }, health: 'DRAINING' },
    ),
  ]);
  const client = connect(t, plane.address);
  const res = await subscribe(client, ENDPOINT, [GRPC_CLUSTER], 'eds-1');
  const [cla] = decodedResources<DecodedLoadAssignment>(res);
  assert.equal(cla?.cluster_name, GRPC_CLUSTER);
  const groups = (cla?.endpoints ?? []).map((g) => ({
    region: g.locality?.region,
    weight: g.load_balancing_weight?.value ?? 0,
    endpoints: (g.lb_endpoints ?? []).map((e) => [
      e.endpoint?.address?.socket_address?.address,
      e.health_status,
    ]),
  }));
  assert.deepEqual(groups, [
    {
      region: 'r1',
      weight: 3,
      endpoints: [
        ['10.0.0.1', 'HEALTHY'],
        ['10.0.0.2', 'UNHEALTHY'],
      ],
    },
    { region: 'r2', weight: 1, endpoints: [['10.0.0.3', 'DRAINING']] },
  ]);
  assert.ok(groups.every((g) => g.weight > 0));
});

const unknownNames: { type: string; typeUrl: string; names: string[]; served: string[] }[] = [
  {
    type: 'CDS',
    typeUrl: CLUSTER,
    names: [GRPC_CLUSTER, 'outbound|7070||missing.test', 'outbound|1||echo.mock.internal'],
    served: [GRPC_CLUSTER],
  },
  {
    type: 'EDS',
    typeUrl: ENDPOINT,
    names: [GRPC_CLUSTER, 'outbound|7070||missing.test', 'garbage'],
    served: [GRPC_CLUSTER],
  },
  {
    type: 'LDS',
    typeUrl: LISTENER,
    names: [`${HOST}:7070`, 'missing.test:7070', HOST],
    served: [`${HOST}:7070`],
  },
  { type: 'RDS', typeUrl: ROUTE, names: [`${HOST}:7070`, `${HOST}:1`], served: [`${HOST}:7070`] },
];
for (const c of unknownNames) {
  test(`${c.type}: unknown resource names are omitted from the response`, async (t) => {
    const plane = await startPlane(t);
    const client = connect(t, plane.address);
    const res = await subscribe(client, c.typeUrl, c.names, `unknown-${c.type}`);
    assert.deepEqual(resourceNames(res), c.served);
  });
}

test('a request naming only unknown resources gets an empty response', async (t) => {
  const plane = await startPlane(t);
  const client = connect(t, plane.address);
  const res = await subscribe(client, ENDPOINT, ['outbound|7070||missing.test'], 'empty-1');
  assert.deepEqual(res.resources, []);
  assert.ok(res.nonce);
});

test('a second client with the same view gets byte-identical resources', async (t) => {
  const plane = await startPlane(t);
  const a = connect(t, plane.address);
  const b = connect(t, plane.address);
  const requests: [string, string[]][] = [
    [CLUSTER, []],
    [ENDPOINT, [GRPC_CLUSTER, HTTP_CLUSTER]],
    [LISTENER, [`${HOST}:7070`]],
    [ROUTE, [`${HOST}:7070`]],
  ];
  for (const [i, [typeUrl, names]] of requests.entries()) {
    const ra = await subscribeAndAck(a, typeUrl, names, i === 0 ? 'same-a' : undefined);
    const rb = await subscribeAndAck(b, typeUrl, names, i === 0 ? 'same-b' : undefined);
    assert.equal(rb.version_info, ra.version_info, `${typeUrl} version`);
    assert.equal(rb.resources.length, ra.resources.length);
    assert.ok(ra.resources.length > 0);
    ra.resources.forEach((r, j) =>
      assert.ok(
        Buffer.from(r.value).equals(Buffer.from(rb.resources[j]?.value ?? [])),
        `${typeUrl} resource ${j} bytes`,
      ),
    );
  }
});

test('a stream is refused with UNAVAILABLE while the discovery has not synced', async (t) => {
  // A registry that has not published its first snapshot yet.
  const plane = await startInProcessPlane({ extraRegistries: [new StubRegistry('late')] });
  t.after(() => plane.stop());
  assert.equal(plane.discovery.hasSynced(), false);
  const client = connect(t, plane.address);
  client.send({ node: grpcNode('early'), type_url: CLUSTER });
  const status = await client.status();
  assert.equal(status.code, grpc.status.UNAVAILABLE);
  assert.match(status.details, /not ready/);
  assert.deepEqual(plane.ads.connectionList(), []);
});
