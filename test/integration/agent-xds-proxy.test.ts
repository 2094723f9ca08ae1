// `portolan agent`'s xDS proxy, in process against a control plane with its CA on the secure port:
// local clients in plaintext, SotW and delta, forwarded over mTLS with the node completed with the
// agent's identity; through an outage a new client is served from the cache and everyone converges
// when the control plane is back; bad local input and refusals end one stream only.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';
import { decodedResources, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';
import { RawDeltaClient } from '../support/raw-delta-client.js';
import { eventually } from '../support/eventually.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import {
  clientNode,
  getText,
  startSecurePlane,
  startTestAgent,
  type SecurePlane,
  type TestAgent,
} from './agent-helpers.js';

const ECHO = 'echo.shop.internal';
const ECHO_CLUSTER = `outbound|7070||${ECHO}`;
let cp: SecurePlane;
let agent: TestAgent;
const clients: { close(): void }[] = [];

function track<T extends { close(): void }>(c: T): T {
  clients.push(c);
  return c;
}

function endpointAddresses(res: Awaited<ReturnType<RawAdsClient['next']>>): string[] {
  type Cla = {
    endpoints?: { lb_endpoints?: { endpoint?: { address?: { socket_address?: { address?: string } } } }[] }[];
  };
  return decodedResources<Cla>(res)
    .flatMap((c) => c.endpoints ?? [])
    .flatMap((l) => l.lb_endpoints ?? [])
    .map((e) => e.endpoint?.address?.socket_address?.address ?? '')
    .sort();
}

before(async () => {
  cp = await startSecurePlane();
  cp.plane.mock.putService(mockService(ECHO, [servicePort('grpc', 7070)], { namespace: 'shop' }));
  cp.plane.mock.setEndpoints(ECHO, [endpoint('127.0.0.7', { grpc: 7070 })]);
  // A long fallback: a cached answer that arrives was sent because the control plane was down.
  agent = await startTestAgent(cp, {
    name: 'proxy',
    token: cp.token('shop', 'cart').token,
    fallbackMs: 60_000,
  });
  await eventually(() => agent.readiness().ready, { what: 'the agent enrolled and connected' });
});

after(async () => {
  for (const c of clients) c.close();
  await agent?.stop();
  await cp?.stop();
});

test('SotW through the agent: the node is completed with the agent’s identity, the control plane serves it over mTLS', async () => {
  const c = track(new RawAdsClient(agent.xdsAddress));
  c.send({ node: clientNode('app-1'), type_url: CLUSTER, resource_names: [] });
  const cds = await c.next();
  assert.deepEqual(resourceNames(cds), [ECHO_CLUSTER]);
  const upstream = cp.opened.find((s) => s.proxy?.id === 'app-1');
  assert.ok(upstream, 'the control plane has the stream');
  assert.deepEqual(
    [
      upstream.proxy?.metadata.NAMESPACE,
      upstream.proxy?.metadata.SERVICE_ACCOUNT,
      upstream.proxy?.metadata.TRUST_DOMAIN,
    ],
    ['shop', 'cart', 'cluster.local'],
  );
  c.ack(cds);
  c.send({ node: clientNode('app-1'), type_url: ENDPOINT, resource_names: [ECHO_CLUSTER] });
  assert.deepEqual(endpointAddresses(await c.next()), ['127.0.0.7']);
});

test('a local client claiming another identity, or with a malformed first request, is refused alone', async () => {
  const ok = track(new RawAdsClient(agent.xdsAddress));
  ok.send({ node: clientNode('app-ok'), type_url: CLUSTER, resource_names: [] });
  const first = await ok.next();

  const liar = track(new RawAdsClient(agent.xdsAddress));
  liar.send({ node: clientNode('app-liar', { SERVICE_ACCOUNT: 'payments' }), type_url: CLUSTER });
  const refused = await liar.status();
  assert.equal(refused.code, grpc.status.PERMISSION_DENIED);
  assert.equal(
    refused.details,
    "node app-liar claims SERVICE_ACCOUNT=payments, but this agent is spiffe://cluster.local/ns/shop/sa/cart: a local client speaks only for the agent's identity",
  );
  const garbage = track(new RawAdsClient(agent.xdsAddress));
  garbage.sendBytes(Buffer.from([0x0a, 0xff, 0xff, 0xff]));
  const malformed = await garbage.status();
  assert.equal(malformed.code, grpc.status.INVALID_ARGUMENT);
  assert.match(malformed.details, /^malformed DiscoveryRequest/);
  const nodeless = track(new RawAdsClient(agent.xdsAddress));
  nodeless.send({ type_url: CLUSTER });
  assert.deepEqual(
    { ...(await nodeless.status()), metadata: undefined },
    { code: grpc.status.INVALID_ARGUMENT, details: 'the first request must carry node', metadata: undefined },
  );
  assert.ok(
    !cp.opened.some((s) => s.proxy?.id === 'app-liar'),
    'the refused node never reached the control plane',
  );
  // The good stream is untouched.
  ok.ack(first);
  ok.send({ type_url: ENDPOINT, resource_names: [ECHO_CLUSTER] });
  assert.deepEqual(endpointAddresses(await ok.next()), ['127.0.0.7']);
});

test('control plane down: a new client is served from the cache at once; back: an endpoint edit reaches both', async () => {
  const a = track(new RawAdsClient(agent.xdsAddress));
  a.send({ node: clientNode('app-2'), type_url: CLUSTER, resource_names: [] });
  const aCds = await a.next();
  a.ack(aCds);
  a.send({ type_url: ENDPOINT, resource_names: [ECHO_CLUSTER] });
  const aEds = await a.next();
  a.ack(aEds, [ECHO_CLUSTER]);
  await eventually(async () => {
    const dump = JSON.parse((await getText(`${agent.statusBase}/debug/config_dump?proxyID=app-2`)).body) as {
      cache: { typeUrl: string }[];
    };
    assert.deepEqual(dump.cache.map((t) => t.typeUrl).sort(), [CLUSTER, ENDPOINT].sort());
  });

  await cp.stopSecurePort();
  await eventually(() => agent.context.upstream.state === 'down', {
    what: 'the agent saw the control plane go',
  });
  const ready = await getText(`${agent.statusBase}/healthz/ready`);
  assert.equal(ready.status, 200, ready.body);
  assert.match(ready.body, /control plane: unreachable/);
  assert.match(ready.body, /serving from the cache: \d+ node\(s\)/);

  // An app restarted during the outage (same node): its config comes from the cache.
  const b = track(new RawAdsClient(agent.xdsAddress));
  b.send({ node: clientNode('app-2'), type_url: CLUSTER, resource_names: [] });
  const bCds = await b.next();
  assert.deepEqual(resourceNames(bCds), [ECHO_CLUSTER]);
  assert.equal(bCds.version_info, aCds.version_info, 'the version the control plane sent');
  b.ack(bCds);
  b.send({ type_url: ENDPOINT, resource_names: [ECHO_CLUSTER] });
  const bEds = await b.next();
  assert.deepEqual(endpointAddresses(bEds), ['127.0.0.7']);
  b.ack(bEds, [ECHO_CLUSTER]);
  const streams = JSON.parse((await getText(`${agent.statusBase}/debug/config_dump?proxyID=app-2`)).body) as {
    streams: { responsesFromCache: number }[];
  };
  assert.deepEqual(streams.streams.map((s) => s.responsesFromCache).sort(), [0, 2]);
  await a.expectNoResponseWithin(200); // a's stream stays open and quiet (the agent answers no probe)

  cp.plane.mock.setEndpoints(ECHO, [
    endpoint('127.0.0.7', { grpc: 7070 }),
    endpoint('127.0.0.8', { grpc: 7070 }),
  ]);
  await cp.startSecurePort();
  for (const client of [a, b]) {
    const eds = await client.next(15_000);
    assert.equal(eds.type_url, ENDPOINT, 'only what changed is pushed: the clusters are the same');
    assert.deepEqual(endpointAddresses(eds), ['127.0.0.7', '127.0.0.8']);
    client.ack(eds, [ECHO_CLUSTER]);
  }
  await eventually(() => agent.context.upstream.connected());
  assert.ok(agent.context.upstream.reconnects >= 1, 'counted as a reconnect');
});

test('delta through the agent: initial versions on reconnect, so only what changed is sent', async () => {
  const d = track(new RawDeltaClient(agent.xdsAddress));
  d.send({ node: clientNode('delta-1'), type_url: CLUSTER });
  const cds = await d.next();
  assert.deepEqual(
    cds.resources.map((r) => r.name),
    [ECHO_CLUSTER],
  );
  d.ack(cds);
  d.send({ type_url: ENDPOINT, resource_names_subscribe: [ECHO_CLUSTER] });
  const eds = await d.next();
  d.ack(eds);
  const before = cp.opened.filter((s) => s.proxy?.id === 'delta-1').length;

  await cp.stopSecurePort();
  await cp.startSecurePort();
  await eventually(
    () => cp.opened.filter((s) => s.proxy?.id === 'delta-1' && s.api === 'delta').length > before,
    {
      what: 'the agent resubscribed delta-1 on a new upstream stream',
      timeoutMs: 15_000,
    },
  );
  await d.expectNoResponseWithin(500); // it holds every version: nothing to send (no probe via the agent)

  cp.plane.mock.setEndpoints(ECHO, [endpoint('127.0.0.9', { grpc: 7070 })]);
  const changed = await d.next(10_000);
  assert.equal(changed.type_url, ENDPOINT);
  assert.deepEqual(
    changed.resources.map((r) => r.name),
    [ECHO_CLUSTER],
  );
});

test('a node the control plane refuses ends that local stream with the reason, once (no retry loop)', async () => {
  // Misconfigured on purpose: its certificate is payments', it claims cart for its clients.
  const liar = await startTestAgent(cp, {
    name: 'misconfigured',
    token: cp.token('shop', 'payments').token,
    certificateIdentity: 'spiffe://cluster.local/ns/shop/sa/payments',
  });
  try {
    await eventually(() => liar.readiness().ready);
    const opened = cp.opened.length;
    const c = track(new RawAdsClient(liar.xdsAddress));
    c.send({ node: clientNode('app-3'), type_url: CLUSTER, resource_names: [] });
    const status = await c.status(10_000);
    assert.equal(status.code, grpc.status.PERMISSION_DENIED);
    assert.equal(
      status.details,
      'the control plane refused the stream: node app-3 claims NAMESPACE=shop SERVICE_ACCOUNT=cart but its certificate is spiffe://cluster.local/ns/shop/sa/payments',
    );
    const other = track(new RawAdsClient(liar.xdsAddress));
    other.send({ node: clientNode('app-4'), type_url: CLUSTER, resource_names: [] });
    assert.equal(
      (await other.status(10_000)).code,
      grpc.status.PERMISSION_DENIED,
      'each stream gets its answer',
    );
    await new Promise((r) => setTimeout(r, 1500)); // several retry periods of the agent's backoff
    assert.equal(cp.opened.length - opened, 2, 'one upstream stream per local stream, none retried');
  } finally {
    await liar.stop();
  }
});

test('local streams beyond --max-local-streams are refused with RESOURCE_EXHAUSTED', async () => {
  const small = await startTestAgent(cp, {
    name: 'small',
    token: cp.token('shop', 'cart').token,
    maxLocalStreams: 1,
  });
  try {
    const one = track(new RawAdsClient(small.xdsAddress));
    one.send({ node: clientNode('app-5'), type_url: CLUSTER, resource_names: [] });
    await eventually(() => small.context.xds.count() === 1);
    const two = track(new RawAdsClient(small.xdsAddress));
    two.send({ node: clientNode('app-6'), type_url: CLUSTER, resource_names: [] });
    const status = await two.status();
    assert.equal(status.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(status.details, /at most 1 local xDS streams \(--max-local-streams\)/);
  } finally {
    await small.stop();
  }
});
