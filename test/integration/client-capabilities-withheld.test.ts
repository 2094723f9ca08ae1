// Pushes that clients will not reject, with the real @grpc/grpc-js-xds and gRPC C-core clients
// against `portolan serve`: a config change that would give its assignment one address twice (which grpc-js-xds 1.14
// and C-core 1.51 NACK, xds/proxy/client-capabilities.ts grpc-eds-duplicate-address) is not sent:
// each client keeps calling the backend it had, has NACKed nothing (/debug/syncz SYNCED), and
// /debug/configz lists the withheld push per client with its node id. The fixed file is sent.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ConfigzView, SynczView } from '../../model/admin-api.js';
import type { CallStream } from '../support/call-stream.js';
import { startCcoreEchoStream } from '../support/ccore-client.js';
import { callEcho, startEchoBackend, type EchoBackend, type EchoClient } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { echoService } from '../support/ops-mesh.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { xdsEchoClient } from '../support/xds-client.js';

const NODE = 'js-withheld';
const CCORE = 'ccore-withheld';

function workload(name: string, address: string, port: number, zone: string): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: ${name}, namespace: default }
spec:
  address: ${address}
  ports: { grpc: ${port} }
  labels: { app: echo }
  locality: us-east/${zone}
`;
}

let dir: string;
let portolan: PortolanProcess;
let client: EchoClient;
let ccore: CallStream | undefined;
const backends: EchoBackend[] = [];
let port: number;

async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(`${portolan.httpBase}${path}`);
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return (await res.json()) as T;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-withheld-'));
  mkdirSync(join(dir, 'config'));
  const first = await startEchoBackend('v1@127.0.0.1', '127.0.0.1');
  backends.push(first, await startEchoBackend('v2@127.0.0.2', '127.0.0.2', first.port));
  port = first.port;
  writeFileSync(join(dir, 'config', 'echo.yaml'), echoService(port));
  writeFileSync(join(dir, 'config', 'echo-1.yaml'), workload('echo-1', '127.0.0.1', port, 'a'));
  portolan = await startPortolanProcess([
    '--registries',
    'config',
    '--config-dir',
    join(dir, 'config'),
    '--data-dir',
    join(dir, 'data'),
  ]);
  client = xdsEchoClient(`xds:///echo.mesh.internal:${port}`, portolan.xdsAddress, NODE);
  await eventually(() => callEcho(client, 2000), { timeoutMs: 20_000, what: 'the first call landing' });
  // C-core calls on until stopped (each call bounded by its 5 s deadline).
  ccore = startCcoreEchoStream(`xds:///echo.mesh.internal:${port}`, portolan.xdsAddress, CCORE, 100_000, {
    intervalMs: 50,
  });
  const calls = ccore.results;
  await eventually(() => calls.some((r) => r.ok), { timeoutMs: 20_000, what: 'a C-core call landing' });
});

after(async () => {
  client?.close();
  await ccore?.stop();
  await portolan?.stop();
  await Promise.all(backends.map((b) => b.stop()));
  rmSync(dir, { recursive: true, force: true });
});

const clientState = async (node = NODE): Promise<SynczView['proxies'][number] | undefined> =>
  (await getJson<SynczView>('/debug/syncz')).proxies.find((p) => p.node === node);

test('an assignment the client would NACK is withheld: calls stay, no NACK, /debug/configz says so; the fix is sent', async () => {
  // /debug/adsz shows each proxy the rules it is checked by, with the types they withhold.
  const adsz = await getJson<{
    clients: { node: string; clientRules: { id: string; withholds?: string[] }[] }[];
  }>('/debug/adsz');
  for (const node of [NODE, CCORE]) {
    const rules = adsz.clients.find((c) => c.node === node)?.clientRules ?? [];
    assert.deepEqual(rules.find((r) => r.id === 'grpc-eds-duplicate-address')?.withholds, ['EDS'], node);
  }

  // The change: a second workload in zone b, and a third at the first one's address (a copy-paste).
  writeFileSync(
    join(dir, 'config', 'echo-2.yaml'),
    `${workload('echo-2', '127.0.0.2', port, 'b')}---\n${workload('echo-1-copy', '127.0.0.1', port, 'b')}`,
  );
  const row = await eventually(
    async () =>
      (await getJson<ConfigzView>('/debug/configz')).withheld.find((w) => w.proxies.includes(NODE)) ?? false,
    { timeoutMs: 15_000, what: 'the withheld push in /debug/configz' },
  );
  assert.equal(row.type, 'EDS');
  assert.equal(row.name, `outbound|${port}||echo.mesh.internal`);
  assert.equal(row.rule, 'grpc-eds-duplicate-address');
  assert.match(row.client, /^gRPC Node/);
  assert.match(row.clientVersion, /^1\./);
  assert.match(row.reason, /duplicate endpoint address 127\.0\.0\.1:/);
  assert.equal(row.kept, true);
  assert.ok(!Number.isNaN(Date.parse(row.since)));

  const ccoreRow = (await getJson<ConfigzView>('/debug/configz')).withheld.find((w) =>
    w.proxies.includes(CCORE),
  );
  assert.match(ccoreRow?.client ?? '', /^gRPC C-core/, 'C-core has a row of its own');
  assert.equal(ccoreRow?.rule, 'grpc-eds-duplicate-address');

  // Both clients kept their last good assignment: every call still lands on v1, nothing NACKed.
  const results = ccore?.results ?? [];
  const mark = results.length;
  for (let i = 0; i < 10; i++) assert.equal(await callEcho(client), 'v1@127.0.0.1');
  await eventually(() => results.length >= mark + 10, { timeoutMs: 20_000, what: '10 more C-core calls' });
  assert.deepEqual(
    results.slice(mark).filter((r) => !r.ok || r.backend !== 'v1@127.0.0.1'),
    [],
    'every C-core call on v1',
  );
  for (const node of [NODE, CCORE]) {
    const state = await clientState(node);
    assert.equal(state?.state, 'SYNCED', node);
    for (const t of Object.values(state?.types ?? {})) assert.equal(t.lastNack, null, node);
  }

  // The fix: the copy goes. The new assignment is sent, v2 is called, nothing is withheld.
  writeFileSync(join(dir, 'config', 'echo-2.yaml'), workload('echo-2', '127.0.0.2', port, 'b'));
  await eventually(async () => (await callEcho(client)) === 'v2@127.0.0.2', {
    timeoutMs: 15_000,
    what: 'a call reaching v2 once the config is fixed',
  });
  await eventually(() => results.some((r, i) => i > mark && r.ok && r.backend === 'v2@127.0.0.2'), {
    timeoutMs: 20_000,
    what: 'a C-core call reaching v2',
  });
  assert.deepEqual((await getJson<ConfigzView>('/debug/configz')).withheld, []);
  for (const node of [NODE, CCORE]) assert.equal((await clientState(node))?.state, 'SYNCED', node);
});
