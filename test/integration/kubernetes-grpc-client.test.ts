// End to end in process: a stand-in API server → the kubernetes registry → aggregate → ADS, and the
// real @grpc/grpc-js-xds client following EndpointSlice changes; while the API server is down no
// push happens (least of all an empty one) and calls keep working; after it returns, the change
// made meanwhile arrives. Also the aggregate's conflict rule with the mock registry.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadClusters } from '../../adapters/kubernetes/kubeconfig.js';
import { KubernetesRegistry } from '../../adapters/kubernetes/registry.js';
import { DEFAULT_TIMING } from '../../adapters/kubernetes/list-watcher.js';
import { silentLogger } from '../../log/logger.js';
import { CLUSTER, ENDPOINT } from '../../xds/proto/type-urls.js';
import { lbAddresses, type DecodedLoadAssignment } from '../support/decoded-xds.js';
import { callEcho, startEchoBackend, type EchoBackend, type EchoClient } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { KubeApiServerStandin } from '../support/kube-apiserver-standin.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { decodedResources, grpcNode, RawAdsClient } from '../support/raw-ads-client.js';
import { startAdsTap } from '../support/ads-tap.js';
import { xdsEchoClient } from '../support/xds-client.js';
import { kubeService, kubeSlice } from '../unit/kubernetes/kube-fixtures.js';

const HOST = 'echo.apps.svc.cluster.local';
const EDS_NAME = `outbound|7070||${HOST}`;

let dir: string;
let standin: KubeApiServerStandin;
let registry: KubernetesRegistry;
let plane: InProcessPlane;
const backends: EchoBackend[] = [];

function publishSlice(members: readonly EchoBackend[]): void {
  standin.apply(
    'endpointslices',
    kubeSlice(
      'apps',
      'echo-abc12',
      'echo',
      [{ name: 'grpc', port: backends[0]?.port ?? 0 }],
      members.map((b) => ({ address: b.address })),
    ),
  );
}

async function reached(client: EchoClient, calls = 8): Promise<string[]> {
  const seen = new Set<string>();
  for (let i = 0; i < calls; i++) seen.add(await callEcho(client));
  return [...seen].sort();
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-kube-e2e-'));
  const first = await startEchoBackend('b1', '127.0.0.1');
  backends.push(
    first,
    await startEchoBackend('b2', '127.0.0.2', first.port),
    await startEchoBackend('b3', '127.0.0.3', first.port),
  );
  standin = await KubeApiServerStandin.start();
  standin.apply('services', kubeService('apps', 'echo', [{ name: 'grpc', port: 7070 }]));
  publishSlice(backends.slice(0, 2));
  registry = new KubernetesRegistry({
    clusters: loadClusters([{ path: standin.kubeconfig(dir), clusterId: 'east' }]),
    domain: 'cluster.local',
    logger: silentLogger,
    timing: { ...DEFAULT_TIMING, requestTimeoutMs: 1000, backoff: { initialMs: 50, maxMs: 200, jitter: 0 } },
  });
  plane = await startInProcessPlane({ extraRegistries: [registry] });
});

after(async () => {
  await plane.stop();
  await standin.stop();
  await Promise.all(backends.map((b) => b.stop()));
  rmSync(dir, { recursive: true, force: true });
});

test('a proxyless gRPC client reaches the EndpointSlice endpoints and follows a change, never NACKing', async () => {
  const tap = await startAdsTap(plane.address);
  const client = xdsEchoClient(`xds:///${HOST}:7070`, tap.address, 'kube-client-1');
  try {
    await eventually(async () => assert.deepEqual(await reached(client), ['b1', 'b2']));
    publishSlice(backends.slice(1, 3));
    await eventually(async () => assert.deepEqual(await reached(client), ['b2', 'b3']));
    assert.ok(tap.requests() > 4, 'the client spoke through the tap');
    assert.deepEqual(tap.nacks, [], 'no NACK at any point');
  } finally {
    client.close();
    tap.stop();
  }
});

test('API server down: stale, nothing pushed, calls keep working; back up: the change made meanwhile arrives', async () => {
  publishSlice(backends.slice(0, 2));
  const client = xdsEchoClient(`xds:///${HOST}:7070`, plane.address, 'kube-client-2');
  const ads = new RawAdsClient(plane.address);
  try {
    await eventually(async () => assert.deepEqual(await reached(client), ['b1', 'b2']));
    ads.send({ node: grpcNode('kube-raw'), type_url: CLUSTER, resource_names: [] });
    ads.ack(await ads.next());
    ads.send({ type_url: ENDPOINT, resource_names: [EDS_NAME] });
    const eds = await ads.next();
    assert.deepEqual(lbAddresses(decodedResources<DecodedLoadAssignment>(eds)[0]).sort(), [
      '127.0.0.1',
      '127.0.0.2',
    ]);
    ads.ack(eds, [EDS_NAME]);
    await ads.expectSilence();

    await standin.down();
    await eventually(() => assert.equal(registry.status().stale, true));
    // meanwhile the slice changes: b3 replaces b1
    publishSlice(backends.slice(1, 3));
    await ads.expectSilence();
    assert.deepEqual(await reached(client), ['b1', 'b2'], 'the last good endpoints keep serving');
    assert.equal(registry.status().endpoints, 2);

    await standin.up();
    const update = await ads.next(10_000);
    assert.equal(update.type_url, ENDPOINT, 'an endpoints-only push');
    const addresses = lbAddresses(decodedResources<DecodedLoadAssignment>(update)[0]).sort();
    assert.deepEqual(addresses, ['127.0.0.2', '127.0.0.3']);
    ads.ack(update, [EDS_NAME]);
    await eventually(() => assert.equal(registry.status().stale, false));
    await eventually(async () => assert.deepEqual(await reached(client), ['b2', 'b3']));
  } finally {
    ads.close();
    client.close();
  }
});

test('the same hostname in mock and kubernetes: the first registry owns the Service, endpoints merge', async () => {
  // The slice this test merges with (set here, so the test does not lean on the one before).
  publishSlice(backends.slice(1, 3));
  await eventually(() =>
    assert.deepEqual(
      plane.discovery
        .endpoints(HOST, 7070)
        .map((pe) => pe.endpoint.address)
        .sort(),
      ['127.0.0.2', '127.0.0.3'],
    ),
  );
  // startInProcessPlane orders the registries mock, then kubernetes
  plane.mock.putService(mockService(HOST, [servicePort('grpc-mock', 7070)]));
  plane.mock.setEndpoints(HOST, [endpoint('127.0.0.9', { 'grpc-mock': 9999 })]);
  try {
    await eventually(() =>
      assert.deepEqual(plane.discovery.conflicts(), [
        { hostname: HOST, owner: 'mock', shadowed: ['kubernetes'] },
      ]),
    );
    const service = plane.discovery.service(HOST);
    assert.equal(service?.registry, 'mock');
    assert.deepEqual(
      service?.ports.map((p) => p.name),
      ['grpc-mock'],
    );
    const merged = plane.discovery
      .endpoints(HOST, 7070)
      .map((pe) => `${pe.endpoint.address}:${pe.port}`)
      .sort();
    const port = backends[0]?.port ?? 0;
    assert.deepEqual(
      merged,
      ['127.0.0.2', '127.0.0.3']
        .map((a) => `${a}:${port}`)
        .concat('127.0.0.9:9999')
        .sort(),
    );
  } finally {
    plane.mock.deleteService(HOST);
  }
  await eventually(() => assert.deepEqual(plane.discovery.conflicts(), []));
  assert.equal(plane.discovery.service(HOST)?.registry, 'kubernetes');
});
