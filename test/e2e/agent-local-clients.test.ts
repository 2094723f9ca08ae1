// End to end, the agent's local interface as a trust boundary (issue #45, items 1, 2 and 5), every
// component real: `portolan serve` with its CA and a WorkloadGroup, `portolan agent --group` (the
// CLI, a child process stopped by PID) serving local xDS on its Unix socket only (the default), and
// raw ADS clients on that socket playing a hostile process of the VM:
//
// - registration metadata in a local node (AUTO_REGISTER_GROUP, INSTANCE_IPS) registers nothing and
//   cannot take the VM's own entry; a health report from a local client is refused;
// - streams are bounded per local client (16) and in all (--max-local-streams); with 128 streams
//   open through the agent (more than the control plane's 100 per connection), a new client is
//   still answered by the control plane, not left to the cache fallback;
// - node ids and NACK messages of megabytes are bounded at the agent;
// - the cache is per whole node: a node with the Envoy's id and other labels fills no entry the
//   Envoy is served from while the control plane is down.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER, HEALTH_INFO } from '../../xds/proto/type-urls.js';
import { startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import { eventually } from '../support/eventually.js';
import { LocalAdsConnection, localNode } from '../support/local-ads-connection.js';
import { portolanCli as cli } from '../support/portolan-cli.js';
import { freePort } from '../support/workload-certs.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';

const VM_IP = '127.0.0.20';
const ENTRY = 'shop/echo-vms-127-0-0-20';
const AGENT_NODE = 'agent/cart.vm-1';
const MAX_LOCAL = 130;

let dir: string;
let securePort: number;
let portolan: PortolanProcess | undefined;
let agent: AgentProcess | undefined;
const connections: LocalAdsConnection[] = [];

function connection(): LocalAdsConnection {
  const c = new LocalAdsConnection(`unix:${join(dir, 'vm', 'run', 'xds.sock')}`);
  connections.push(c);
  return c;
}

interface Registered {
  entry: string;
  node: string;
  state: string;
  health: string;
}

async function autoRegistered(): Promise<Registered[]> {
  const view = (await (await fetch(`${portolan?.httpBase ?? ''}/debug/registryz`)).json()) as {
    autoRegistered: Registered[];
  };
  return view.autoRegistered;
}

async function controlPlaneClients(): Promise<
  { node: string | null; subscriptions: Record<string, { lastNack: { message?: string } | null }> }[]
> {
  const view = (await (await fetch(`${portolan?.httpBase ?? ''}/debug/adsz`)).json()) as {
    clients: Awaited<ReturnType<typeof controlPlaneClients>>;
  };
  return view.clients;
}

function statusBase(): string {
  return `http://${String(agent?.logs.find((l) => l.msg === 'portolan agent serving')?.status)}`;
}

/** The agent's open local streams and cached nodes (its /debug/config_dump). */
async function agentDump(): Promise<{ nodes: { node: string }[]; streams: { node: string | null }[] }> {
  return (await (await fetch(`${statusBase()}/debug/config_dump`)).json()) as Awaited<
    ReturnType<typeof agentDump>
  >;
}

/** Closes a test's connections and waits until the agent holds none of their streams. */
async function closeAll(list: LocalAdsConnection[]): Promise<void> {
  for (const c of list) c.close();
  await eventually(async () => (await agentDump()).streams.length === 0, {
    what: 'the agent let go of the closed streams',
  });
}

function startServe(): Promise<PortolanProcess> {
  return startPortolanProcess([
    '--config-dir',
    join(dir, 'config'),
    '--data-dir',
    join(dir, 'data'),
    '--secure-xds-addr',
    `127.0.0.1:${securePort}`,
    '--secure-xds-sans',
    'localhost,127.0.0.1',
    '--auto-registration-grace',
    '2s',
  ]);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-local-'));
  mkdirSync(join(dir, 'config'));
  writeFileSync(
    join(dir, 'config', 'mesh.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [echo.vm.internal]
  ports: [{ number: 7070, name: grpc, protocol: GRPC }]
  resolution: STATIC
  workloadSelector: { labels: { app: echo-vm } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: echo-vms, namespace: shop }
spec:
  metadata: { labels: { app: echo-vm } }
  template: { serviceAccount: cart }
`,
  );
  securePort = await freePort();
  portolan = await startServe();
  writeFileSync(join(dir, 'root-cert.pem'), await cli(['ca', 'root', '--data-dir', join(dir, 'data')]));
  const token = (
    await cli([
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      'cart',
      '--data-dir',
      join(dir, 'data'),
    ])
  ).trim();
  agent = await startAgentProcess(
    [
      '--ca-addr',
      `127.0.0.1:${securePort}`,
      '--root-cert',
      join(dir, 'root-cert.pem'),
      '--namespace',
      'shop',
      '--service-account',
      'cart',
      '--node-id',
      'cart.vm-1',
      '--cert-dir',
      join(dir, 'vm', 'certs'),
      '--data-dir',
      join(dir, 'vm', 'data'),
      '--run-dir',
      join(dir, 'vm', 'run'),
      '--group',
      'echo-vms',
      '--instance-ip',
      VM_IP,
      '--no-dns',
      '--max-local-streams',
      String(MAX_LOCAL),
      // The default: local xDS on the Unix socket alone (the helper's TCP port undone).
      '--listen-xds',
      'off',
    ],
    { env: { PORTOLAN_JOIN_TOKEN: token } },
  );
  await eventually(
    async () => (await autoRegistered()).find((r) => r.entry === ENTRY && r.state === 'connected'),
    { what: 'the VM registered through the agent', timeoutMs: 20_000 },
  );
});

after(async () => {
  for (const c of connections) c.close();
  await agent?.stop(5000);
  await portolan?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('a local client cannot register an endpoint, take the VM’s entry, or report its health', async () => {
  assert.deepEqual(agent?.xdsAddress.startsWith('unix:'), true, 'local xDS on the socket only');
  const c = connection();
  // A new endpoint at an address of the attacker's choosing, into the VM's group.
  const register = c.open({
    node: localNode('evil-1', { AUTO_REGISTER_GROUP: 'echo-vms', INSTANCE_IPS: '127.0.0.99' }),
    type_url: CLUSTER,
  });
  await register.next(); // the control plane has taken the node in
  assert.deepEqual(
    (await autoRegistered()).map((r) => `${r.entry} ${r.node}`),
    [`${ENTRY} ${AGENT_NODE}`],
    'nothing registered for the local client',
  );
  // The VM's own address, then gone: the VM must stay in its service.
  const takeover = c.open({
    node: localNode('evil-2', { AUTO_REGISTER_GROUP: 'echo-vms', INSTANCE_IPS: VM_IP }),
    type_url: CLUSTER,
  });
  await takeover.next();
  assert.equal((await autoRegistered()).find((r) => r.entry === ENTRY)?.node, AGENT_NODE);
  takeover.cancel();
  await eventually(async () => !(await controlPlaneClients()).some((x) => x.node === 'evil-2'), {
    what: 'the control plane saw the stream go',
  });
  const entry = (await autoRegistered()).find((r) => r.entry === ENTRY);
  assert.deepEqual([entry?.node, entry?.state], [AGENT_NODE, 'connected']);
  assert.ok(
    agent?.logs.some(
      (l) => l.node === 'evil-2' && JSON.stringify(l.removed) === JSON.stringify(['AUTO_REGISTER_GROUP']),
    ),
    'the agent says what it removed',
  );
  // A health report (Istio's istio.io/health) is the agent's own stream's business.
  const health = c.open({
    node: localNode('evil-3'),
    type_url: HEALTH_INFO,
    error_detail: { code: grpc.status.UNAVAILABLE, message: 'down' },
  });
  const refused = await health.ended();
  assert.equal(refused.code, grpc.status.PERMISSION_DENIED);
  assert.match(refused.details, /agent's own stream/);
  assert.equal((await autoRegistered()).find((r) => r.entry === ENTRY)?.health, 'HEALTHY');
  await closeAll([c]);
});

test('streams are bounded per local client and in all; with 128 open a new client is answered by the control plane', async () => {
  const opened: LocalAdsConnection[] = [];
  const flood: LocalAdsConnection[] = [];
  for (let i = 0; i < 8; i++) flood.push(connection());
  // One node on every stream: concurrent streams of one node are legitimate (grpc-go ≥ 1.66).
  const node = localNode('flood.vm-1');
  const streams = flood.flatMap((c) => Array.from({ length: 16 }, () => c.open({ node, type_url: CLUSTER })));
  for (const s of streams) await s.next(20_000);
  const extra = flood[0]?.open({ node, type_url: CLUSTER });
  const perClient = await extra?.ended();
  assert.equal(perClient?.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.match(perClient?.details ?? '', /one client/);
  // A new client, with nothing cached for it: only the control plane can answer it.
  const freshConnection = connection();
  opened.push(freshConnection);
  const fresh = freshConnection.open({ node: localNode('fresh.vm-1'), type_url: CLUSTER });
  const answer = await fresh.next(10_000);
  assert.equal(answer.type_url, CLUSTER);
  // 129 open; one more is the last the agent takes.
  const last = connection();
  opened.push(last);
  const ok = last.open({ node: localNode('fresh.vm-1'), type_url: CLUSTER });
  await ok.next();
  const over = last.open({ node: localNode('fresh.vm-1'), type_url: CLUSTER });
  const total = await over.ended();
  assert.equal(total.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.match(total.details, new RegExp(`at most ${MAX_LOCAL}`));
  await closeAll([...flood, ...opened]);
});

test('node ids and NACK messages of megabytes are bounded at the agent', async () => {
  const c = connection();
  const huge = c.open({ node: localNode('x'.repeat(2 * 1024 * 1024)), type_url: CLUSTER });
  const refused = await huge.ended();
  assert.equal(refused.code, grpc.status.INVALID_ARGUMENT);
  assert.match(refused.details, /at most 1024/);
  const s = c.open({ node: localNode('nacker.vm-1'), type_url: CLUSTER });
  const res = await s.next();
  s.send({
    type_url: CLUSTER,
    response_nonce: res.nonce,
    error_detail: { code: grpc.status.INVALID_ARGUMENT, message: 'e'.repeat(3 * 1024 * 1024) },
  });
  const nack = await eventually(
    async () =>
      (await controlPlaneClients()).find((x) => x.node === 'nacker.vm-1')?.subscriptions.CDS?.lastNack ??
      false,
    { what: 'the control plane got the NACK' },
  );
  assert.ok((nack.message?.length ?? 0) <= 4200, `forwarded ${nack.message?.length ?? 0} chars`);
  const logged = await eventually(
    () => agent?.logs.find((l) => l.node === 'nacker.vm-1' && /NACK/.test(String(l.msg))) ?? false,
  );
  assert.ok(String(logged.error).length <= 4200, 'the NACK is logged bounded');
  for (const l of agent?.logs ?? [])
    assert.ok(JSON.stringify(l).length < 16_384, 'no log line carries megabytes');
  await closeAll([c]);
});

test('the cache is per whole node: another node with the Envoy’s id is never served its entry', async (t) => {
  // The control plane this test stops is back, and the agent on it, for any test after this one.
  t.after(async () => {
    portolan ??= await startServe();
    await eventually(
      async () =>
        /control plane: connected/.test(await (await fetch(`${statusBase()}/healthz/ready`)).text()),
      { what: 'the agent back on the control plane', timeoutMs: 20_000 },
    );
  });
  // A local process takes the Envoy's guessable id with other labels, and ACKs what it gets.
  const c = connection();
  const poison = c.open({ node: localNode('cart.vm-1', {}, { app: 'evil' }), type_url: CLUSTER });
  const res = await poison.next();
  poison.send({ type_url: CLUSTER, version_info: res.version_info, response_nonce: res.nonce });
  await eventually(async () => (await agentDump()).nodes.some((n) => n.node === 'cart.vm-1'), {
    what: 'the agent cached what it ACKed',
  });
  poison.cancel();
  await portolan?.stop();
  portolan = undefined;
  await eventually(
    async () =>
      /control plane: unreachable/.test(await (await fetch(`${statusBase()}/healthz/ready`)).text()),
    { what: 'the agent saw the control plane go', timeoutMs: 20_000 },
  );
  // The Envoy (its own labels) restarts during the outage: nothing cached is its. Then the node
  // cached, on the same connection (so its answer comes after any the first would get): served at
  // once from the cache, which works, only never across nodes.
  const restarted = connection();
  const envoy = restarted.open({ node: localNode('cart.vm-1', {}, { app: 'cart' }), type_url: CLUSTER });
  const same = restarted.open({ node: localNode('cart.vm-1', {}, { app: 'evil' }), type_url: CLUSTER });
  assert.equal((await same.next()).type_url, CLUSTER);
  assert.equal(envoy.responses.length, 0, 'the other node got nothing from the cache');
});
