// `portolan serve --registries kubernetes,...` as a child process against two stand-in API servers:
// the flags, /ready, /debug/registryz (sync state, counts, staleness, last error, watch
// resourceVersions, cluster ids), the conflict rule with the mock registry, and bad flags.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { eventually } from '../support/eventually.js';
import { KubeApiServerStandin } from '../support/kube-apiserver-standin.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { kubeService, kubeSlice } from '../unit/kubernetes/kube-fixtures.js';

const HOST = 'echo.apps.svc.cluster.local';

interface RegistryView {
  name: string;
  status: { synced: boolean; stale: boolean; lastError?: string; services: number; endpoints: number };
  debug?: {
    domain: string;
    clusters: {
      clusterId: string;
      synced: boolean;
      watches: Record<string, { resourceVersion: string; synced: boolean }>;
    }[];
  };
  services: {
    hostname: string;
    registry: string;
    endpoints: { address: string; labels: Record<string, string> }[];
  }[];
}

interface Registryz {
  synced: boolean;
  registries: RegistryView[];
  conflicts: { hostname: string; owner: string; shadowed: string[] }[];
}

let dir: string;
let east: KubeApiServerStandin;
let west: KubeApiServerStandin;

async function registryz(p: PortolanProcess): Promise<Registryz> {
  const res = await fetch(`${p.httpBase}/debug/registryz`);
  assert.equal(res.status, 200);
  return (await res.json()) as Registryz;
}

function kubernetesView(z: Registryz): RegistryView {
  const view = z.registries.find((r) => r.name === 'kubernetes');
  assert.ok(view, 'the kubernetes registry is listed');
  return view;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-kube-serve-'));
  east = await KubeApiServerStandin.start();
  west = await KubeApiServerStandin.start();
  for (const [s, address] of [
    [east, '10.1.0.1'],
    [west, '10.2.0.1'],
  ] as const) {
    s.apply('services', kubeService('apps', 'echo', [{ name: 'grpc', port: 7070 }]));
    s.apply(
      'endpointslices',
      kubeSlice('apps', 'echo-1', 'echo', [{ name: 'grpc', port: 50051 }], [{ address }]),
    );
  }
  west.apply('services', kubeService('apps', 'west-only', [{ name: 'http', port: 80 }]));
});

after(async () => {
  await east.stop();
  await west.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('two clusters in /debug/registryz: synced, counts, watch versions; a conflict with mock; stale and back', async () => {
  const kubeconfigs = `${east.kubeconfig(dir, { context: 'east-ctx' })}=east,${west.kubeconfig(dir, { context: 'west-ctx' })}=west`;
  const portolan = await startPortolanProcess([
    '--registries',
    'kubernetes,mock',
    '--kubeconfig',
    kubeconfigs,
    '--data-dir',
    join(dir, 'data-1'),
  ]);
  try {
    assert.equal((await fetch(`${portolan.httpBase}/ready`)).status, 200);
    const z = await registryz(portolan);
    const kube = kubernetesView(z);
    assert.equal(kube.status.synced, true);
    assert.equal(kube.status.stale, false);
    assert.equal(kube.status.services, 2);
    assert.equal(kube.status.endpoints, 2);
    assert.equal(kube.debug?.domain, 'cluster.local');
    assert.deepEqual(
      kube.debug?.clusters.map((c) => c.clusterId),
      ['east', 'west'],
    );
    for (const [cluster, standin] of [
      [kube.debug?.clusters[0], east],
      [kube.debug?.clusters[1], west],
    ] as const) {
      assert.deepEqual(Object.keys(cluster?.watches ?? {}).sort(), [
        'endpointslices',
        'nodes',
        'pods',
        'services',
      ]);
      assert.equal(cluster?.watches.services?.resourceVersion, standin.resourceVersion());
    }
    const echo = kube.services.find((s) => s.hostname === HOST);
    assert.deepEqual(
      echo?.endpoints.map((e) => [e.address, e.labels['topology.istio.io/cluster']]),
      [
        ['10.1.0.1', 'east'],
        ['10.2.0.1', 'west'],
      ],
    );

    // the mock registry may not write to a hostname kubernetes serves
    const json = { 'content-type': 'application/json' };
    const body = JSON.stringify({ ports: [{ name: 'grpc', number: 7070, protocol: 'GRPC' }] });
    const refused = await fetch(`${portolan.httpBase}/mock/services/${HOST}`, {
      method: 'PUT',
      headers: json,
      body,
    });
    assert.equal(refused.status, 409, 'kubernetes serves it');
    // one the mock defined first, which kubernetes then serves too: kubernetes (first in
    // --registries) owns it, and the aggregate reports the conflict
    const LATE = 'late.apps.svc.cluster.local';
    const put = await fetch(`${portolan.httpBase}/mock/services/${LATE}`, {
      method: 'PUT',
      headers: json,
      body,
    });
    assert.ok(put.ok, `PUT ${put.status}`);
    east.apply('services', kubeService('apps', 'late', [{ name: 'grpc', port: 7070 }]));
    await eventually(async () =>
      assert.deepEqual((await registryz(portolan)).conflicts, [
        { hostname: LATE, owner: 'kubernetes', shadowed: ['mock'] },
      ]),
    );

    // east goes away: stale with east's error, its last good state still counted
    await east.down();
    await eventually(async () => {
      const status = kubernetesView(await registryz(portolan)).status;
      assert.equal(status.stale, true);
      assert.match(status.lastError ?? '', /^cluster east: /);
      assert.equal(status.endpoints, 2);
    });
    await east.up();
    await eventually(async () => assert.equal(kubernetesView(await registryz(portolan)).status.stale, false));
  } finally {
    const exit = await portolan.stop();
    assert.equal(exit.code, 0);
  }
});

test('--registries kubernetes alone, with --domain', async () => {
  const portolan = await startPortolanProcess([
    '--registries',
    'kubernetes',
    '--kubeconfig',
    west.kubeconfig(dir, { context: 'solo' }),
    '--domain',
    'corp.example',
    '--data-dir',
    join(dir, 'data-2'),
  ]);
  try {
    assert.equal((await fetch(`${portolan.httpBase}/ready`)).status, 200);
    const kube = kubernetesView(await registryz(portolan));
    assert.deepEqual(kube.services.map((s) => s.hostname).sort(), [
      'echo.apps.svc.corp.example',
      'west-only.apps.svc.corp.example',
    ]);
    assert.deepEqual(
      kube.debug?.clusters.map((c) => c.clusterId),
      ['solo'],
    );
  } finally {
    await portolan.stop();
  }
});

test('a bad --kubeconfig or --domain stops serve with exit code 2 and the reason', async () => {
  await assert.rejects(
    startPortolanProcess([
      '--registries',
      'kubernetes',
      '--kubeconfig',
      join(dir, 'missing.yaml'),
      '--data-dir',
      join(dir, 'data-3'),
    ]),
    /exited with 2.*--kubeconfig .*missing\.yaml.*ENOENT/s,
  );
  await assert.rejects(
    startPortolanProcess([
      '--registries',
      'kubernetes',
      '--kubeconfig',
      east.kubeconfig(dir),
      '--domain',
      'not a domain',
      '--data-dir',
      join(dir, 'data-3'),
    ]),
    /exited with 2.*--domain/s,
  );
});
