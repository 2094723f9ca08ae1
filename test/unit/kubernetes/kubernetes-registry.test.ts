// The kubernetes registry against stand-in API servers: conversion end to end, incremental changes,
// two clusters merged, and a failing API server (stale, last good state, recovery).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadClusters } from '../../../adapters/kubernetes/kubeconfig.js';
import { KubernetesRegistry } from '../../../adapters/kubernetes/registry.js';
import { DEFAULT_TIMING } from '../../../adapters/kubernetes/list-watcher.js';
import { silentLogger } from '../../../log/logger.js';
import { endpointsOnly, changedHosts, type ChangeEvent } from '../../../model/change.js';
import { eventually } from '../../support/eventually.js';
import { KubeApiServerStandin } from '../../support/kube-apiserver-standin.js';
import { kubeNode, kubePod, kubeService, kubeSlice } from './kube-fixtures.js';

const HOST = 'echo.apps.svc.cluster.local';
const FAST = { requestTimeoutMs: 1000, backoff: { initialMs: 20, maxMs: 100, jitter: 0 } };

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-kube-reg-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

function registry(standins: { standin: KubeApiServerStandin; id: string }[]): KubernetesRegistry {
  const clusters = loadClusters(
    standins.map(({ standin, id }) => ({ path: standin.kubeconfig(dir, { context: id }), clusterId: id })),
  );
  return new KubernetesRegistry({
    clusters,
    domain: 'cluster.local',
    logger: silentLogger,
    timing: { ...DEFAULT_TIMING, ...FAST },
  });
}

function seedEcho(s: KubeApiServerStandin, addresses: string[], { zone = 'z1', sa = 'echo-sa' } = {}): void {
  s.apply('nodes', kubeNode('node-1', 'r1', zone));
  addresses.forEach((_, i) => s.apply('pods', kubePod('apps', `echo-${i}`, sa, { app: 'echo' })));
  s.apply(
    'services',
    kubeService('apps', 'echo', [{ name: 'grpc', port: 7070 }], { clusterIP: '10.96.0.7' }),
  );
  s.apply(
    'endpointslices',
    kubeSlice(
      'apps',
      'echo-1',
      'echo',
      [{ name: 'grpc', port: 50051 }],
      addresses.map((address, i) => ({ address, nodeName: 'node-1', pod: `echo-${i}` })),
    ),
  );
}

test('Services, EndpointSlices, Nodes and Pods become one synced snapshot; debug shows each watch', async () => {
  const s = await KubeApiServerStandin.start();
  seedEcho(s, ['10.0.0.1', '10.0.0.2']);
  const reg = registry([{ standin: s, id: 'east' }]);
  try {
    await reg.start();
    assert.equal(reg.name, 'kubernetes');
    assert.equal(reg.hasSynced(), true);
    const snap = reg.snapshot();
    assert.deepEqual([...snap.services.keys()], [HOST]);
    assert.deepEqual(snap.services.get(HOST)?.ports, [{ name: 'grpc', number: 7070, protocol: 'GRPC' }]);
    assert.deepEqual(
      snap.endpoints
        .get(HOST)
        ?.map((e) => [
          e.address,
          e.ports,
          e.locality.zone,
          e.serviceAccount,
          e.labels['topology.istio.io/cluster'],
        ]),
      [
        ['10.0.0.1', { grpc: 50051 }, 'z1', 'echo-sa', 'east'],
        ['10.0.0.2', { grpc: 50051 }, 'z1', 'echo-sa', 'east'],
      ],
    );
    assert.deepEqual(
      { ...reg.status(), lastSyncAt: undefined },
      { synced: true, stale: false, lastSyncAt: undefined, services: 1, endpoints: 2 },
    );
    const debug = reg.debug();
    assert.equal(debug.domain, 'cluster.local');
    assert.equal(debug.clusters[0]?.clusterId, 'east');
    assert.equal(debug.clusters[0]?.server, s.url);
    const watches = debug.clusters[0]?.watches ?? {};
    assert.deepEqual(Object.keys(watches).sort(), ['endpointslices', 'nodes', 'pods', 'services']);
    for (const w of Object.values(watches)) {
      assert.equal(w.synced, true);
      assert.equal(w.resourceVersion, s.resourceVersion());
    }
  } finally {
    await reg.stop();
    await s.stop();
  }
});

test('an EndpointSlice change is an endpoints-only change; a Service change is not; a deletion removes it', async () => {
  const s = await KubeApiServerStandin.start();
  seedEcho(s, ['10.0.0.1']);
  const reg = registry([{ standin: s, id: 'east' }]);
  const events: ChangeEvent[] = [];
  reg.onChange((e) => events.push(e));
  try {
    await reg.start();
    events.length = 0;
    s.apply(
      'endpointslices',
      kubeSlice('apps', 'echo-1', 'echo', [{ name: 'grpc', port: 50051 }], [{ address: '10.0.0.9' }]),
    );
    await eventually(() =>
      assert.deepEqual(
        reg
          .snapshot()
          .endpoints.get(HOST)
          ?.map((e) => e.address),
        ['10.0.0.9'],
      ),
    );
    assert.deepEqual(
      events.map((e) => [[...changedHosts(e)], endpointsOnly(e)]),
      [[[HOST], true]],
    );

    s.apply('services', kubeService('apps', 'echo', [{ name: 'grpc', port: 7071 }]));
    await eventually(() => assert.equal(reg.snapshot().services.get(HOST)?.ports[0]?.number, 7071));
    assert.deepEqual(events[1] && [[...changedHosts(events[1])], endpointsOnly(events[1])], [[HOST], false]);

    s.remove('services', 'apps', 'echo');
    await eventually(() => assert.equal(reg.snapshot().services.size, 0));
    assert.equal(reg.snapshot().endpoints.has(HOST), false);
  } finally {
    await reg.stop();
    await s.stop();
  }
});

test('a Pod or Node change reconverts the endpoints built from it', async () => {
  const s = await KubeApiServerStandin.start();
  // the slice names a pod and a node that do not exist yet
  s.apply('services', kubeService('apps', 'echo', [{ name: 'grpc', port: 7070 }]));
  s.apply(
    'endpointslices',
    kubeSlice(
      'apps',
      'echo-1',
      'echo',
      [{ name: 'grpc', port: 50051 }],
      [{ address: '10.0.0.1', nodeName: 'node-1', pod: 'echo-0' }],
    ),
  );
  const reg = registry([{ standin: s, id: 'east' }]);
  const only = (): { sa: string; region: string } => {
    const e = reg.snapshot().endpoints.get(HOST)?.[0];
    return { sa: e?.serviceAccount ?? '?', region: e?.locality.region ?? '?' };
  };
  try {
    await reg.start();
    assert.deepEqual(only(), { sa: '', region: '' });
    s.apply('pods', kubePod('apps', 'echo-0', 'late-sa'));
    await eventually(() => assert.deepEqual(only(), { sa: 'late-sa', region: '' }));
    s.apply('nodes', kubeNode('node-1', 'eu-west', 'eu-west-1a'));
    await eventually(() => assert.deepEqual(only(), { sa: 'late-sa', region: 'eu-west' }));
    s.apply('nodes', kubeNode('node-1', 'eu-north', 'eu-north-1a'));
    await eventually(() => assert.deepEqual(only(), { sa: 'late-sa', region: 'eu-north' }));
  } finally {
    await reg.stop();
    await s.stop();
  }
});

test('two clusters: the same Service merges endpoints (first cluster owns the definition, ports by number)', async () => {
  const east = await KubeApiServerStandin.start();
  const west = await KubeApiServerStandin.start();
  seedEcho(east, ['10.1.0.1']);
  // west names the port differently and has its own VIP; it also has a Service east lacks
  west.apply(
    'services',
    kubeService('apps', 'echo', [{ name: 'grpc-echo', port: 7070 }], { clusterIP: '10.97.0.7' }),
  );
  west.apply(
    'endpointslices',
    kubeSlice('apps', 'echo-w', 'echo', [{ name: 'grpc-echo', port: 50052 }], [{ address: '10.2.0.1' }]),
  );
  west.apply('services', kubeService('apps', 'west-only', [{ name: 'http', port: 80 }]));
  const reg = registry([
    { standin: east, id: 'east' },
    { standin: west, id: 'west' },
  ]);
  try {
    await reg.start();
    const snap = reg.snapshot();
    assert.deepEqual([...snap.services.keys()].sort(), [HOST, 'west-only.apps.svc.cluster.local']);
    const svc = snap.services.get(HOST);
    assert.deepEqual(svc?.ports, [{ name: 'grpc', number: 7070, protocol: 'GRPC' }], "east's definition");
    assert.deepEqual(svc?.addresses, ['10.96.0.7', '10.97.0.7']);
    assert.deepEqual(
      snap.endpoints.get(HOST)?.map((e) => [e.address, e.ports, e.labels['topology.istio.io/cluster']]),
      [
        ['10.1.0.1', { grpc: 50051 }, 'east'],
        ['10.2.0.1', { grpc: 50052 }, 'west'],
      ],
    );
    assert.deepEqual(
      reg.debug().clusters.map((c) => c.clusterId),
      ['east', 'west'],
    );
    // a change in west alone reaches the merged view
    west.apply(
      'endpointslices',
      kubeSlice('apps', 'echo-w', 'echo', [{ name: 'grpc-echo', port: 50052 }], [{ address: '10.2.0.2' }]),
    );
    await eventually(() =>
      assert.deepEqual(
        reg
          .snapshot()
          .endpoints.get(HOST)
          ?.map((e) => e.address),
        ['10.1.0.1', '10.2.0.2'],
      ),
    );
    // when east drops it, west's definition takes over
    east.remove('services', 'apps', 'echo');
    await eventually(() =>
      assert.deepEqual(
        reg
          .snapshot()
          .services.get(HOST)
          ?.ports.map((p) => p.name),
        ['grpc-echo'],
      ),
    );
    assert.deepEqual(
      reg
        .snapshot()
        .endpoints.get(HOST)
        ?.map((e) => e.address),
      ['10.2.0.2'],
    );
  } finally {
    await reg.stop();
    await east.stop();
    await west.stop();
  }
});

test('API server down: stale, the last good state published unchanged, no change events; back up: recovered', async () => {
  const s = await KubeApiServerStandin.start();
  seedEcho(s, ['10.0.0.1', '10.0.0.2']);
  const reg = registry([{ standin: s, id: 'east' }]);
  const events: ChangeEvent[] = [];
  reg.onChange((e) => events.push(e));
  try {
    await reg.start();
    const good = reg.snapshot();
    events.length = 0;
    await s.down();
    await eventually(() => assert.equal(reg.status().stale, true));
    assert.match(reg.status().lastError ?? '', /^cluster east: /);
    assert.equal(reg.snapshot(), good, 'the same snapshot object: nothing was republished');
    assert.equal(reg.status().endpoints, 2);
    // it keeps retrying with backoff
    const debugWatches = reg.debug().clusters[0]?.watches ?? {};
    assert.ok(Object.values(debugWatches).some((w) => w.lastError !== undefined));
    // a change made while it was unreachable arrives after recovery
    s.apply(
      'endpointslices',
      kubeSlice('apps', 'echo-1', 'echo', [{ name: 'grpc', port: 50051 }], [{ address: '10.0.0.3' }]),
    );
    assert.deepEqual(events, [], 'no change while down');
    await s.up();
    await eventually(() => assert.equal(reg.status().stale, false));
    await eventually(() =>
      assert.deepEqual(
        reg
          .snapshot()
          .endpoints.get(HOST)
          ?.map((e) => e.address),
        ['10.0.0.3'],
      ),
    );
    assert.equal(reg.status().lastError, undefined);
  } finally {
    await reg.stop();
    await s.stop();
  }
});

test('not synced until every cluster has listed: a cluster unreachable at start holds it back', async () => {
  const east = await KubeApiServerStandin.start();
  const west = await KubeApiServerStandin.start();
  seedEcho(east, ['10.1.0.1']);
  const reg = registry([
    { standin: east, id: 'east' },
    { standin: west, id: 'west' },
  ]);
  await west.down();
  try {
    await reg.start();
    assert.equal(reg.hasSynced(), false);
    assert.equal(reg.snapshot().services.size, 0, 'nothing published without west');
    assert.match(reg.status().lastError ?? '', /^cluster west: .*ECONNREFUSED/);
    await west.up();
    await eventually(() => assert.equal(reg.hasSynced(), true));
    assert.deepEqual([...reg.snapshot().services.keys()], [HOST]);
    assert.equal(reg.status().stale, false);
  } finally {
    await reg.stop();
    await east.stop();
    await west.stop();
  }
});
