// Operating the mesh (issue #19) against `portolan serve` as a process and real streams: a real
// @grpc/grpc-js-xds client in SYNCED state, a raw client that NACKs, one that never ACKs, a delta
// client and an Envoy sidecar (test/support/ops-mesh.ts). The debug endpoints /debug/syncz,
// /debug/push_status and /debug/edsz, the `proxy-status` and `proxy-config` commands, the proxy
// history's start times, `token list`, and the process metrics' names.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { parse as parseYaml } from 'yaml';
import type { EdszView } from '../../admin/edsz.js';
import type { PushRecord } from '../../admin/push-history.js';
import type { ProxySync, SynczView } from '../../admin/syncz.js';
import { callEcho } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { ECHO_HOST, NACK_MESSAGE, startOpsMesh, type OpsMesh } from '../support/ops-mesh.js';

const SIDECAR = 'sidecar~127.0.0.3~web-1.default~default.svc.cluster.local';
let mesh: OpsMesh;

before(async () => {
  mesh = await startOpsMesh();
});
after(() => mesh?.stop());

async function proxies(): Promise<Map<string, ProxySync>> {
  const view = await mesh.getJson<SynczView>('/debug/syncz');
  return new Map(view.proxies.map((p) => [p.node, p]));
}

test('/debug/syncz: SYNCED, NACK with its message, STALE with how long, and each proxy kind and API', async () => {
  const all = await eventually(async () => {
    const p = await proxies();
    assert.equal(p.get(SIDECAR)?.types.EDS?.state, 'SYNCED');
    assert.equal(p.get(SIDECAR)?.types.RDS?.state, 'SYNCED');
    return p;
  });
  const client = all.get('echo-client-1');
  assert.equal(client?.state, 'SYNCED');
  assert.deepEqual(Object.keys(client?.types ?? {}), ['CDS', 'EDS', 'LDS', 'RDS']);
  for (const t of Object.values(client?.types ?? {})) {
    assert.equal(t.state, 'SYNCED');
    assert.equal(t.ackedNonce, t.sentNonce);
    assert.equal(t.ackedVersion, t.sentVersion);
  }
  assert.equal(client?.proxyType, 'grpc');
  assert.equal(client?.api, 'sotw');

  const nacker = all.get('nacker');
  assert.equal(nacker?.state, 'NACK');
  assert.equal(nacker?.types.CDS?.state, 'NACK');
  assert.equal(nacker?.types.CDS?.lastNack?.message, NACK_MESSAGE);
  assert.equal(nacker?.types.CDS?.ackedVersion, null);

  const silent = all.get('silent');
  assert.equal(silent?.types.CDS?.state, 'STALE');
  assert.ok((silent?.types.CDS?.sinceSentMs ?? -1) >= 0);
  assert.equal(silent?.types.CDS?.ackedNonce, null);

  assert.equal(all.get('delta-client-1')?.api, 'delta');
  assert.equal(all.get('delta-client-1')?.types.CDS?.state, 'SYNCED');
  assert.equal(all.get(SIDECAR)?.proxyType, 'sidecar');
  assert.equal(all.get(SIDECAR)?.kind, 'envoy');

  const one = await mesh.getJson<SynczView>('/debug/syncz?proxyID=nacker');
  assert.deepEqual(
    one.proxies.map((p) => p.node),
    ['nacker'],
  );
  const missing = await fetch(`${mesh.portolan.httpBase}/debug/syncz?proxyID=nobody`);
  assert.equal(missing.status, 404);
});

test('portolan proxy-status: one line per proxy with exact states, exit 1 while a proxy NACKs', async () => {
  await eventually(async () => assert.equal((await proxies()).get(SIDECAR)?.types.RDS?.state, 'SYNCED'));
  const r = mesh.cli(['proxy-status', '--http-addr', mesh.httpAddr]);
  assert.equal(r.status, 1, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^NAME +KIND +API +CDS +LDS +EDS +RDS +CONNECTED$/);
  const line = (node: string): string => lines.find((l) => l.startsWith(`${node} `)) ?? '';
  assert.match(line('echo-client-1'), /^echo-client-1 +gRPC +SotW +SYNCED +SYNCED +SYNCED +SYNCED +\S+ ago$/);
  assert.match(line('nacker'), /^nacker +gRPC +SotW +NACK +- +- +- /);
  assert.match(line('silent'), /^silent +gRPC +SotW +STALE \(\S+\) +- +- +- /);
  assert.match(line('delta-client-1'), /^delta-client-1 +gRPC +delta +SYNCED /);
  assert.match(line(SIDECAR), / Envoy sidecar +SotW +SYNCED +SYNCED +SYNCED +SYNCED /);

  const detail = mesh.cli(['proxy-status', 'nacker', '--http-addr', mesh.httpAddr]);
  assert.equal(detail.status, 1);
  assert.match(detail.stdout, /^State +NACK$/m);
  assert.ok(detail.stdout.includes(`code 3: ${NACK_MESSAGE}`), detail.stdout);

  const synced = mesh.cli(['proxy-status', 'echo-client-1', '--http-addr', mesh.httpAddr, '-o', 'json']);
  assert.equal(synced.status, 0, synced.stderr);
  assert.equal((JSON.parse(synced.stdout) as ProxySync).state, 'SYNCED');

  const unknown = mesh.cli(['proxy-status', 'nobody', '--http-addr', mesh.httpAddr]);
  assert.equal(unknown.status, 2);
  assert.equal(unknown.stderr, 'error: no connected proxy with node id nobody\n');
});

test('portolan proxy-config: tables of what a proxy was sent, and the full resources as JSON or YAML', async () => {
  const clusters = mesh.cli(['proxy-config', 'clusters', 'echo-client-1', '--http-addr', mesh.httpAddr]);
  assert.equal(clusters.status, 0, clusters.stderr);
  const port = mesh.echoPort;
  assert.match(clusters.stdout, /^NAME +SERVICE +PORT +SUBSET +DIRECTION +TYPE +LB$/m);
  assert.match(
    clusters.stdout,
    new RegExp(
      `^outbound\\|${port}\\|v1\\|${ECHO_HOST} +${ECHO_HOST} +${port} +v1 +outbound +EDS +ROUND_ROBIN$`,
      'm',
    ),
  );
  const routes = mesh.cli(['proxy-config', 'routes', 'echo-client-1', '--http-addr', mesh.httpAddr]);
  assert.match(
    routes.stdout,
    new RegExp(`outbound\\|${port}\\|v1\\|${ECHO_HOST} 80%, outbound\\|${port}\\|v2\\|${ECHO_HOST} 20%`),
  );
  const endpoints = mesh.cli(['proxy-config', 'endpoints', SIDECAR, '--http-addr', mesh.httpAddr]);
  assert.match(
    endpoints.stdout,
    /^127\.0\.0\.8:7070 +UNHEALTHY +1 +us-west\/us-west-2a +0 +outbound\|7070\|\|cart\.mock\.internal$/m,
  );
  const listeners = mesh.cli(['proxy-config', 'listeners', 'echo-client-1', '--http-addr', mesh.httpAddr]);
  assert.match(
    listeners.stdout,
    new RegExp(`^${ECHO_HOST}:${port} +\\(api listener\\) +- +route ${ECHO_HOST}:${port}$`, 'm'),
  );

  const json = mesh.cli(['proxy-config', 'all', 'echo-client-1', '--http-addr', mesh.httpAddr, '-o', 'json']);
  const body = JSON.parse(json.stdout) as Record<string, { '@type': string }[]>;
  assert.deepEqual(Object.keys(body), ['clusters', 'listeners', 'routes', 'endpoints']);
  assert.equal(body.clusters?.[0]?.['@type'], 'type.googleapis.com/envoy.config.cluster.v3.Cluster');
  const yaml = mesh.cli(['proxy-config', 'clusters', SIDECAR, '--http-addr', mesh.httpAddr, '-o', 'yaml']);
  const fromYaml = parseYaml(yaml.stdout) as { clusters: { name: string }[] };
  assert.ok(fromYaml.clusters.some((c) => c.name === 'outbound|7070||cart.mock.internal'));

  const bad = mesh.cli(['proxy-config', 'secrets', 'echo-client-1', '--http-addr', mesh.httpAddr]);
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /value 'secrets' is invalid for argument 'kind'/);
});

test('/debug/edsz: the load assignments as sent, by locality with health and weight', async () => {
  const view = await mesh.getJson<EdszView>('/debug/edsz?proxyID=echo-client-1');
  const v1 = view.clusters.find((c) => c.clusterName.includes('|v1|'));
  assert.deepEqual(v1?.localities, [
    {
      locality: { region: 'us-east', zone: 'us-east-1a', subZone: '' },
      priority: 0,
      weight: 1,
      endpoints: [{ address: '127.0.0.1', port: mesh.echoPort, health: 'HEALTHY', weight: 1 }],
    },
  ]);
  assert.equal((await fetch(`${mesh.portolan.httpBase}/debug/edsz`)).status, 400);
  assert.equal((await fetch(`${mesh.portolan.httpBase}/debug/edsz?proxyID=nobody`)).status, 404);
});

test('/debug/push_status: an edit is pushed with its trigger (registry, file, hostnames), proxies, responses and convergence', async (t) => {
  const file = join(mesh.dir, 'traffic', 'echo-rules.yaml');
  const original = readFileSync(file, 'utf8');
  // The other tests read the 80/20 split: it is back, and served, when this one ends.
  t.after(async () => {
    writeFileSync(file, original);
    await eventually(async () => {
      const routes = mesh.cli(['proxy-config', 'routes', 'echo-client-1', '--http-addr', mesh.httpAddr]);
      assert.match(routes.stdout, / 80%, .* 20%/);
    });
  });
  writeFileSync(file, original.replace('weight: 80', 'weight: 50').replace('weight: 20', 'weight: 50'));
  // The split follows the edit (the call lands on the new routes), then the push record is complete.
  await eventually(async () => {
    const routes = mesh.cli(['proxy-config', 'routes', 'echo-client-1', '--http-addr', mesh.httpAddr]);
    assert.match(routes.stdout, / 50%, .* 50%/);
  });
  await callEcho(mesh.client);
  const push = await eventually(async () => {
    const status = await mesh.getJson<{ recent: PushRecord[] }>('/debug/push_status');
    const p = status.recent.find((r) => r.trigger.files.includes('traffic/echo-rules.yaml'));
    assert.ok(p, JSON.stringify(status.recent.map((r) => r.trigger)));
    assert.notEqual(p.convergenceMs, null);
    return p;
  });
  assert.equal(push.kind, 'config');
  assert.deepEqual(push.trigger.registries, ['config']);
  assert.ok((push.proxies ?? 0) >= 1, `proxies: ${push.proxies}`);
  assert.ok((push.responses.RDS ?? 0) >= 1, JSON.stringify(push.responses));
});

test('the proxy history records when a stream started, not when the record was written', async () => {
  const live = (await proxies()).get('echo-client-1');
  const recorded = await eventually(async () => {
    const h = await mesh.getJson<{ proxies: { nodeId: string; connectedAt: string }[] }>('/debug/historyz');
    const row = h.proxies.find((p) => p.nodeId === 'echo-client-1');
    assert.ok(row);
    return row;
  });
  assert.equal(recorded.connectedAt, live?.connectedAt);
});

test('portolan token list: a header row, and a spent token shows as used up', () => {
  const r = mesh.cli(['token', 'list', '--data-dir', mesh.dataDir]);
  assert.equal(r.status, 0, r.stderr);
  const [header, ...rows] = r.stdout.trimEnd().split('\n');
  assert.match(header ?? '', /^ID +STATE +USES LEFT +EXPIRES +IDENTITY$/);
  assert.ok(
    rows.some((l) => /^\w+ +used up +0 +\S+ +spiffe:\/\/cluster\.local\/ns\/default\/sa\/echo$/.test(l)),
    r.stdout,
  );
  assert.ok(
    rows.some((l) => /^\w+ +live +3 +\S+ +spiffe:\/\/cluster\.local\/ns\/default\/sa\/web$/.test(l)),
    r.stdout,
  );
});

test('process metrics are named portolan_process_* and portolan_nodejs_*, the prefix no longer doubled', async () => {
  const text = await (await fetch(`${mesh.portolan.httpBase}/metrics`)).text();
  assert.match(text, /^portolan_process_cpu_user_seconds_total /m);
  assert.match(text, /^portolan_nodejs_eventloop_lag_seconds /m);
  assert.doesNotMatch(text, /portolan_process_process_|portolan_process_nodejs_/);
});

test('proxy-status exits 0 once no proxy NACKs (a deploy gate opens)', async (t) => {
  // The other tests read the nacker: it NACKs again when this one ends.
  t.after(async () => {
    await mesh.reconnectNacker();
    await eventually(async () => assert.equal((await proxies()).get('nacker')?.state, 'NACK'));
  });
  mesh.disconnect('nacker');
  await eventually(() => assert.equal(mesh.cli(['proxy-status', '--http-addr', mesh.httpAddr]).status, 0));
});
