// DestinationRules from the config directory, end to end with the real @grpc/grpc-js-xds client:
// circuit breaking (http2MaxRequests) drops the call over the limit and follows a live edit of the
// file; consistentHash (RING_HASH cluster + the route's header hash policy) keeps one header value on
// one backend; subset clusters and their endpoints reach an ADS
// client; what gRPC cannot take shows in the config directory's debug state. The gRPC clients speak
// through an ADS tap that records any NACK they send.
import { trafficLimitations } from '../../xds/traffic/limitations.js';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import {
  callEchoWith,
  startEchoBackend,
  type EchoBackend,
  type EchoClient,
} from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { decodedResources, grpcNode, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';
import { startAdsTap, type AdsTap } from '../support/ads-tap.js';
import { xdsEchoClient } from '../support/xds-client.js';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';

const HOST = 'echo.dr.internal';

let plane: InProcessPlane;
let tap: AdsTap;
let dir: string;
const backends: EchoBackend[] = [];
/** Calls with message `hold` wait here until released; `held` counts the ones waiting. */
let releaseHeld: () => void = () => undefined;
let held = 0;
const holdGate = async (message: string): Promise<void> => {
  if (message !== 'hold') return;
  held += 1;
  await new Promise<void>((resolve) => {
    const previous = releaseHeld;
    releaseHeld = () => {
      previous();
      resolve();
    };
  });
  held -= 1;
};

function destinationRule(trafficPolicy: string): string {
  return [
    'apiVersion: networking.istio.io/v1',
    'kind: DestinationRule',
    'metadata: {name: echo, namespace: default}',
    'spec:',
    `  host: ${HOST}`,
    '  trafficPolicy:',
    ...trafficPolicy.split('\n').map((l) => `    ${l}`),
    '  subsets:',
    '    - {name: v1, labels: {version: v1}}',
    '    - {name: v2, labels: {version: v2}}',
    '',
  ].join('\n');
}

/** Writes the rule and waits until the config directory serves it (a new mesh config generation). */
async function writeRule(trafficPolicy: string): Promise<void> {
  const config = plane.config ?? assert.fail('config registry');
  const before = config.meshConfig().generation;
  await writeFile(join(dir, 'echo-dr.yaml'), destinationRule(trafficPolicy));
  await eventually(() => {
    assert.ok(config.meshConfig().generation > before, 'the new rule is in force');
    assert.equal(config.debugState().files.find((f) => f.path === 'echo-dr.yaml')?.status, 'ok');
  });
}

function call(client: EchoClient, message: string): Promise<string> {
  return new Promise((resolve, reject) => {
    client.Echo({ message }, { deadline: Date.now() + 5000 }, (err, res) =>
      err ? reject(err) : resolve(res?.backend ?? ''),
    );
  });
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portolan-dr-'));
  plane = await startInProcessPlane({ configDir: dir });
  tap = await startAdsTap(plane.address);
  const first = await startEchoBackend('b1', '127.0.0.1', 0, holdGate);
  backends.push(first, await startEchoBackend('b2', '127.0.0.2', first.port, holdGate));
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
  plane.mock.setEndpoints(HOST, [
    endpoint(first.address, { grpc: first.port }, { labels: { version: 'v1' } }),
    endpoint('127.0.0.2', { grpc: first.port }, { labels: { version: 'v2' } }),
  ]);
});

after(async () => {
  releaseHeld();
  tap.stop();
  await plane.stop();
  await Promise.all(backends.map((b) => b.stop()));
  await rm(dir, { recursive: true, force: true });
});

test('http2MaxRequests: the call over the limit is dropped; editing the file lifts the limit live', async () => {
  await writeRule('connectionPool: {http: {http2MaxRequests: 1}}');
  const client = xdsEchoClient(`xds:///${HOST}:7070`, tap.address, 'grpc-dr-cb');
  try {
    await eventually(() => call(client, 'warm-up'));
    const first = call(client, 'hold');
    await eventually(() => assert.equal(held, 1));
    await assert.rejects(call(client, 'second'), (err: grpc.ServiceError) => {
      assert.equal(err.code, 14, 'UNAVAILABLE');
      assert.match(err.details, /dropped by load balancing policy/);
      return true;
    });
    releaseHeld();
    assert.match(await first, /^b[12]$/);

    await writeRule('connectionPool: {http: {http2MaxRequests: 10}}');
    await eventually(async () => {
      const holding = call(client, 'hold');
      try {
        await eventually(() => assert.equal(held, 1), { timeoutMs: 5000 });
        assert.match(await call(client, 'second'), /^b[12]$/, 'a second concurrent call now passes');
      } finally {
        releaseHeld();
        await holding.catch(() => undefined);
      }
    });
    assert.deepEqual(
      tap.nacks.filter((n) => n.node === 'grpc-dr-cb'),
      [],
      'no NACK at any point',
    );
  } finally {
    client.close();
  }
});

test('consistentHash end to end: one x-user value sticks to one backend, different values spread', async () => {
  await writeRule('loadBalancer: {consistentHash: {httpHeaderName: x-user, minimumRingSize: 64}}');
  const client = xdsEchoClient(`xds:///${HOST}:7070`, tap.address, 'grpc-dr-hash');
  try {
    // The cluster is RING_HASH (this DestinationRule) and the route hashes on the x-user header
    // (the same rule, rendered as the route's hash_policy, gRFC A42). A call without the header
    // hashes at random, so those reach both backends.
    const seen = new Set<string>();
    await eventually(async () => {
      seen.add(await call(client, 'hi'));
      assert.deepEqual([...seen].sort(), ['b1', 'b2']);
    });
    const byUser = new Map<string, Set<string>>();
    for (let round = 0; round < 3; round++)
      for (let u = 0; u < 32; u++) {
        const user = `user-${u}`;
        const res = await callEchoWith(client, { 'x-user': user });
        assert.ok('backend' in res, `call for ${user} failed: ${'error' in res ? res.error.message : ''}`);
        byUser.set(user, (byUser.get(user) ?? new Set()).add(res.backend));
      }
    for (const [user, backendsOfUser] of byUser)
      assert.equal(
        backendsOfUser.size,
        1,
        `${user}'s calls all land on one backend: ${[...backendsOfUser].join(', ')}`,
      );
    const used = new Set([...byUser.values()].flatMap((b) => [...b]));
    assert.deepEqual([...used].sort(), ['b1', 'b2'], 'different users spread over both backends');

    const conn = plane.ads.connectionList().find((c) => c.proxy?.id === 'grpc-dr-hash');
    const cds = conn?.state.typeState(CLUSTER);
    assert.equal(cds?.ackedVersion, cds?.sent?.version);
    assert.deepEqual(
      tap.nacks.filter((n) => n.node === 'grpc-dr-hash'),
      [],
      'no NACK at any point (RING_HASH cluster, hash policy route)',
    );
  } finally {
    client.close();
  }
});

test('subset clusters and their label-matched endpoints over ADS; gRPC limitations in configz', async () => {
  await writeRule('outlierDetection: {consecutive5xxErrors: 3}\nloadBalancer: {simple: LEAST_REQUEST}');
  const ads = new RawAdsClient(plane.address);
  try {
    const v1 = `outbound|7070|v1|${HOST}`;
    const v2 = `outbound|7070|v2|${HOST}`;
    ads.send({ node: grpcNode('raw-dr'), type_url: CLUSTER, resource_names: [v1, v2] });
    const cds = await ads.next();
    assert.deepEqual(resourceNames(cds).sort(), [v1, v2]);
    for (const c of decodedResources(cds))
      assert.equal(c.lb_policy, 'ROUND_ROBIN', 'LEAST_REQUEST → ROUND_ROBIN');
    ads.ack(cds, [v1, v2]);
    ads.send({ type_url: ENDPOINT, resource_names: [v1] });
    const eds = await ads.next();
    const addresses = decodedResources<{
      endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string } } } }[] }[];
    }>(eds)
      .flatMap((a) => a.endpoints)
      .flatMap((l) => l.lb_endpoints)
      .map((e) => e.endpoint.address.socket_address.address);
    assert.deepEqual(addresses, ['127.0.0.1']);
  } finally {
    ads.close();
  }
  const limits = plane.config ? trafficLimitations(plane.config.meshConfig()) : [];
  assert.deepEqual(limits.map((l) => `${l.resource} ${l.field} ${l.clients.join(',')}`).sort(), [
    'DestinationRule/default/echo spec.trafficPolicy.loadBalancer.simple grpc',
    'DestinationRule/default/echo spec.trafficPolicy.outlierDetection grpc',
  ]);
});
