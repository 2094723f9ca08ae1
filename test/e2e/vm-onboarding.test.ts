// End to end, VM fleet onboarding through the agent, every component real: `portolan serve` with its
// CA and a WorkloadGroup with a tcpSocket probe; `portolan agent --group` (the CLI, a child process
// stopped by PID) on a VM whose echo backend listens on its instance IP (127.0.0.20); the real
// @grpc/grpc-js-xds client and gRPC C-core reach it through a ServiceEntry selecting the group's
// labels, beside a hand-written WorkloadEntry (127.0.0.21). Stopping the backend takes it out of
// rotation with no failed call, starting it brings it back; the agent's DNS proxy answers mesh
// names (the ServiceEntry address, an auto-allocated one) and forwards the rest to a test resolver
// on loopback; a control-plane restart within the grace keeps the entry, stopping the agent removes
// it after the grace; an agent of another service account is refused with the reason.
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { register as registerXds } from '@grpc/grpc-js-xds';
import { startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import { ccoreEchoCalls } from '../support/ccore-client.js';
import { answerData, queryDns, splitAddress, startTestResolver, type TestResolver } from '../support/dns.js';
import {
  echoClientClass,
  startEchoBackend,
  type EchoBackend,
  type EchoClient,
} from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { portolanCli as cli } from '../support/portolan-cli.js';
import { freePort } from '../support/workload-certs.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';

registerXds();

const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';
const VM_IP = '127.0.0.20';
const STATIC_IP = '127.0.0.21';
const ENTRY = 'shop/echo-vms-127-0-0-20';
// Longer than the agent's reconnect backoff after a few seconds of outage (0.5 s doubling, jittered).
const GRACE_MS = 8000;

let dir: string;
let port: number;
let securePort: number;
let portolan: PortolanProcess | undefined;
let agent: AgentProcess | undefined;
let vmBackend: EchoBackend | undefined;
let resolver: TestResolver | undefined;
const backends: EchoBackend[] = [];
const clients: EchoClient[] = [];
const others: AgentProcess[] = [];

interface Registered {
  entry: string;
  node: string;
  state: string;
  health: string;
  reason?: string;
}

async function registryz(): Promise<{
  autoRegistered: Registered[];
  registries: {
    name: string;
    services: { hostname: string; endpoints: { address: string; health: string }[] }[];
  }[];
}> {
  return (await (await fetch(`${portolan?.httpBase ?? ''}/debug/registryz`)).json()) as Awaited<
    ReturnType<typeof registryz>
  >;
}

async function registered(): Promise<Registered | undefined> {
  return (await registryz()).autoRegistered.find((r) => r.entry === ENTRY);
}

async function echoEndpoints(): Promise<string[]> {
  const config = (await registryz()).registries.find((r) => r.name === 'config');
  const echo = config?.services.find((s) => s.hostname === 'echo.vm.internal');
  return (echo?.endpoints ?? []).map((e) => `${e.address} ${e.health}`).sort();
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
    `${GRACE_MS}ms`,
  ]);
}

function agentArgs(name: string, serviceAccount: string, extra: string[]): string[] {
  return [
    '--ca-addr',
    `127.0.0.1:${securePort}`,
    '--root-cert',
    join(dir, 'root-cert.pem'),
    '--namespace',
    'shop',
    '--service-account',
    serviceAccount,
    '--cert-dir',
    join(dir, name, 'certs'),
    '--data-dir',
    join(dir, name, 'data'),
    '--run-dir',
    join(dir, name, 'run'),
    '--group',
    'echo-vms',
    ...extra,
  ];
}

async function token(serviceAccount: string): Promise<string> {
  const args = ['token', 'create', '--namespace', 'shop', '--service-account', serviceAccount];
  return (await cli([...args, '--data-dir', join(dir, 'data')])).trim();
}

function grpcJsClient(): EchoClient {
  const bootstrap = JSON.parse(readFileSync(join(dir, 'grpc-bootstrap.json'), 'utf8')) as object;
  const Client = echoClientClass();
  const client = new Client(`xds:///echo.vm.internal:${port}`, grpc.credentials.createInsecure(), {
    [BOOTSTRAP_OPTION]: JSON.stringify(bootstrap),
  });
  clients.push(client);
  return client;
}

/** One call: the name of the backend that answered, or the error. */
function call(client: EchoClient): Promise<string> {
  return new Promise((resolve) =>
    client.Echo({ message: 'hi' }, { deadline: Date.now() + 5000 }, (err, reply) =>
      resolve(err ? `error: ${err.details}` : (reply?.backend ?? '')),
    ),
  );
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-onboard-e2e-'));
  mkdirSync(join(dir, 'config'));
  vmBackend = await startEchoBackend('vm', VM_IP, 0);
  port = vmBackend.port;
  backends.push(await startEchoBackend('static', STATIC_IP, port));
  resolver = await startTestResolver('192.0.2.55');
  writeFileSync(
    join(dir, 'config', 'echo.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [echo.vm.internal]
  addresses: [10.77.0.9]
  ports: [{ number: ${port}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  workloadSelector: { labels: { app: echo-vm } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: static-vm, namespace: shop }
spec: { address: ${STATIC_IP}, labels: { app: echo-vm } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: echo-vms, namespace: shop }
spec:
  metadata: { labels: { app: echo-vm } }
  template: { serviceAccount: echo }
  probe: { periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 1, tcpSocket: { port: ${port} } }
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: db, namespace: shop }
spec:
  hosts: [db.vm.internal]
  ports: [{ number: 5432, name: tcp, protocol: TCP }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.30 }]
`,
  );
  securePort = await freePort();
  portolan = await startServe();
  writeFileSync(join(dir, 'root-cert.pem'), await cli(['ca', 'root', '--data-dir', join(dir, 'data')]));
});

after(async () => {
  for (const c of clients) c.close();
  for (const a of others) await a.stop(5000);
  await agent?.stop(5000);
  await portolan?.stop();
  await vmBackend?.stop();
  for (const b of backends) await b.stop();
  await resolver?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The VM's agent, registered and HEALTHY: started unless it runs, so that each test has it whatever
 * ran before (the restart test stops it and leaves it to the next test to start).
 */
async function ensureAgent(): Promise<AgentProcess> {
  agent ??= await startAgentProcess(
    agentArgs('vm', 'echo', [
      '--instance-ip',
      VM_IP,
      '--node-id',
      'echo-vm-1',
      '--grpc-bootstrap',
      join(dir, 'grpc-bootstrap.json'),
      '--dns-upstream',
      resolver?.address ?? '',
    ]),
    { env: { PORTOLAN_JOIN_TOKEN: await token('echo') } },
  );
  await eventually(
    async () =>
      assert.deepEqual(
        { ...(await registered()) },
        { ...(await registered()), node: 'agent/echo-vm-1', state: 'connected', health: 'HEALTHY' },
      ),
    { timeoutMs: 20_000, what: 'the VM registered, its probe passing' },
  );
  return agent;
}

test('the VM registers into its group; grpc-js and C-core reach it; a failing probe takes it out of rotation and back', async () => {
  const vm = await ensureAgent();
  assert.deepEqual(await echoEndpoints(), [`${VM_IP} HEALTHY`, `${STATIC_IP} HEALTHY`]);

  const client = grpcJsClient();
  const seen = new Set<string>();
  await eventually(
    async () => {
      seen.add(await call(client));
      return seen.has('vm') && seen.has('static');
    },
    { timeoutMs: 20_000, what: 'grpc-js reaching both endpoints' },
  );
  const bootstrap = JSON.parse(readFileSync(join(dir, 'grpc-bootstrap.json'), 'utf8')) as {
    node: Record<string, unknown>;
  };
  const ccore = await ccoreEchoCalls(`xds:///echo.vm.internal:${port}`, '', '', 20, {
    bootstrap: { ...bootstrap, node: { ...bootstrap.node, id: 'echo-ccore-1' } },
  });
  assert.ok(
    ccore.every((r) => r.ok),
    JSON.stringify(ccore),
  );
  assert.ok(
    ccore.some((r) => r.backend === 'vm'),
    `C-core reached the auto-registered VM: ${JSON.stringify(ccore)}`,
  );

  // The application stops (between calls, gracefully as on SIGTERM: a crash would fail the one call
  // already on its connection): its probe fails, its endpoint goes UNHEALTHY, and no call fails
  // while the other endpoint serves.
  await vmBackend?.drain();
  vmBackend = undefined;
  const answers: string[] = [];
  await eventually(
    async () => {
      answers.push(await call(client));
      const r = await registered();
      return r?.health === 'UNHEALTHY' && /ECONNREFUSED/.test(r.reason ?? '');
    },
    { timeoutMs: 15_000, what: 'the probe failure reported as UNHEALTHY with its reason' },
  );
  assert.deepEqual(await echoEndpoints(), [`${VM_IP} UNHEALTHY`, `${STATIC_IP} HEALTHY`]);
  const status = (await (await fetch(`${vm.statusBase}/debug/workload`)).json()) as {
    healthy: boolean;
    lastCheck: { ok: boolean; message: string };
  };
  assert.equal(status.healthy, false);
  assert.match(status.lastCheck.message, new RegExp(`tcp ${VM_IP}:${port}: .*ECONNREFUSED`));
  for (let i = 0; i < 20; i++) answers.push(await call(client));
  assert.deepEqual(
    answers.filter((a) => a !== 'static'),
    [],
    'every call answered by the remaining endpoint',
  );

  // Back: the probe passes, HEALTHY again, and calls reach the VM.
  vmBackend = await startEchoBackend('vm', VM_IP, port);
  await eventually(async () => (await registered())?.health === 'HEALTHY', {
    timeoutMs: 15_000,
    what: 'the probe passing again',
  });
  await eventually(async () => (await call(client)) === 'vm', {
    timeoutMs: 20_000,
    what: 'calls reaching the VM again',
  });
  // Closed while its xDS server (the agent) is up: a grpc-js-xds client whose server vanished
  // keeps retrying, and would hold the test process open.
  for (const c of clients.splice(0)) c.close();
});

test("the agent's DNS proxy answers mesh names from the control plane and forwards the rest", async (t) => {
  const vm = await ensureAgent();
  const file = join(dir, 'config', 'echo.yaml');
  const original = readFileSync(file, 'utf8');
  // The edit below is undone for the tests after this one.
  t.after(() => writeFileSync(file, original));
  const dns = vm.dnsAddress ?? '';
  assert.notEqual(dns, '');
  assert.deepEqual(answerData(await queryDns(dns, 'echo.vm.internal')), ['10.77.0.9']);
  assert.deepEqual(answerData(await queryDns(dns, 'ECHO.vm.internal.', 'A', { transport: 'tcp' })), [
    '10.77.0.9',
  ]);
  assert.deepEqual(answerData(await queryDns(dns, 'echo.vm.internal', 'AAAA')), []);
  // A service without an address: one allocated from 240.240.0.0/16 and 2001:2::/48.
  const [v4 = ''] = answerData(await queryDns(dns, 'db.vm.internal'));
  assert.match(v4, /^240\.240\.\d+\.\d+$/);
  assert.match(answerData(await queryDns(dns, 'db.vm.internal', 'AAAA'))[0] ?? '', /^2001:2::[0-9a-f]+$/);
  // Outside the mesh: the upstream resolver's answer.
  assert.deepEqual(answerData(await queryDns(dns, 'www.example.org')), ['192.0.2.55']);
  assert.ok(resolver?.asked.includes('www.example.org'));
  assert.equal(resolver?.asked.includes('echo.vm.internal'), false);
  // A malformed packet is dropped; the next query is answered.
  const { host, port: dnsPort } = splitAddress(dns);
  const garbage = createSocket('udp4');
  await new Promise<void>((resolve) =>
    garbage.send(Buffer.from([1, 2, 3, 4, 5]), dnsPort, host, () => resolve()),
  );
  garbage.close();
  assert.deepEqual(answerData(await queryDns(dns, 'echo.vm.internal')), ['10.77.0.9']);
  const dnsz = (await (await fetch(`${vm.statusBase}/debug/dnsz`)).json()) as { malformed: number };
  assert.equal(dnsz.malformed, 1);

  // The table follows the config live: a new address is answered.
  writeFileSync(file, original.replace('10.77.0.9', '10.77.0.10'));
  await eventually(async () => answerData(await queryDns(dns, 'echo.vm.internal'))[0] === '10.77.0.10', {
    timeoutMs: 15_000,
    what: 'the DNS answer following the ServiceEntry edit',
  });
});

test('an agent of another service account is refused with the reason', async () => {
  const other = await startAgentProcess(agentArgs('intruder', 'cart', ['--instance-ip', '127.0.0.22']), {
    env: { PORTOLAN_JOIN_TOKEN: await token('cart') },
  });
  others.push(other);
  await eventually(
    async () => {
      const res = await fetch(`${other.statusBase}/healthz/ready`);
      assert.equal(res.status, 503);
      assert.match(
        await res.text(),
        /refused this agent: WorkloadGroup shop\/echo-vms is for service account echo, but this agent is spiffe:\/\/cluster\.local\/ns\/shop\/sa\/cart/,
      );
    },
    { timeoutMs: 20_000, what: 'the refusal in the agent status' },
  );
  assert.equal(
    (await registryz()).autoRegistered.some((r) => r.entry.includes('127-0-0-22')),
    false,
  );
});

test('a control-plane restart within the grace keeps the entry; a stopped agent loses it after the grace', async () => {
  await ensureAgent();
  await portolan?.stop();
  portolan = await startServe();
  // Restored from the store at once (before the agent is back), still selected by the ServiceEntry,
  // and there at every look until the agent is back.
  assert.ok((await echoEndpoints()).includes(`${VM_IP} HEALTHY`));
  let missing = 0;
  await eventually(
    async () => {
      const r = await registered();
      if (!r) missing += 1;
      return r?.state === 'connected';
    },
    { timeoutMs: 20_000, intervalMs: 100, what: 'the agent reconnecting' },
  );
  assert.equal(missing, 0, 'the entry is never missing while the agent reconnects');
  // That it then outlives the restored grace is the unit test's to show, on a manual clock
  // (test/unit/registration/auto-registration.test.ts), not a wait of GRACE_MS here.
  assert.equal((await registered())?.state, 'connected');

  await agent?.stop(5000);
  agent = undefined;
  await eventually(async () => (await registered())?.state === 'disconnected', {
    timeoutMs: 10_000,
    what: 'the entry kept, disconnected',
  });
  assert.ok((await echoEndpoints()).includes(`${VM_IP} HEALTHY`));
  await eventually(async () => (await registered()) === undefined, {
    timeoutMs: GRACE_MS + 10_000,
    what: 'the entry removed after the grace',
  });
  assert.deepEqual(await echoEndpoints(), [`${STATIC_IP} HEALTHY`]);
});
