// End to end, a VM joining with `portolan agent`, every component real: `portolan serve` with its CA,
// the agent enrolled with a join token (the CLI as a child process, stopped by PID), the real
// @grpc/grpc-js-xds client and gRPC C-core (python3-grpcio) pointed at the agent's plaintext port
// with the bootstrap the agent wrote, calling echo backends. The control plane sees them over its
// secure port under the agent's identity; with the control plane stopped a new client still gets its
// config and its calls succeed; back, an endpoint edit reaches that client. A raw SDS client on the
// agent's Unix socket gets `default` and `ROOTCA` (= `portolan ca root`), and a root rotation pushes
// the new bundle on the open stream. A crash between writing the key and the certificate, and the
// old layout's mismatched pair, leave states the agent recovers from.
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { register as registerXds } from '@grpc/grpc-js-xds';
import { RawSdsClient } from '../integration/agent-helpers.js';
import { startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import { ccoreEchoCalls } from '../support/ccore-client.js';
import {
  callEcho,
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

const ID = 'spiffe://cluster.local/ns/shop/sa/cart';
const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';

let dir: string;
let port: number; // the echo service's port, on both backends
let securePort: number;
let portolan: PortolanProcess | undefined;
let agent: AgentProcess | undefined;
const backends: EchoBackend[] = [];
const clients: EchoClient[] = [];
const extraAgents: AgentProcess[] = [];

function writeConfig(addresses: string[]): void {
  writeFileSync(
    join(dir, 'config', 'echo.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [echo.shop.internal]
  ports: [{ number: ${port}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [${addresses.map((a) => `{ address: ${a} }`).join(', ')}]
`,
  );
}

async function startServe(): Promise<PortolanProcess> {
  return startPortolanProcess([
    '--config-dir',
    join(dir, 'config'),
    '--data-dir',
    join(dir, 'data'),
    '--secure-xds-addr',
    `127.0.0.1:${securePort}`,
    '--secure-xds-sans',
    'localhost,127.0.0.1',
  ]);
}

/** The agent's gRPC bootstrap, as its --grpc-bootstrap file has it, with another node id if given. */
function bootstrap(nodeId?: string): Record<string, unknown> {
  const b = JSON.parse(readFileSync(join(dir, 'grpc-bootstrap.json'), 'utf8')) as {
    node: Record<string, unknown>;
  };
  if (nodeId) b.node = { ...b.node, id: nodeId };
  return b;
}

function grpcJsClient(nodeId?: string): EchoClient {
  const Client = echoClientClass();
  const client = new Client(`xds:///echo.shop.internal:${port}`, grpc.credentials.createInsecure(), {
    [BOOTSTRAP_OPTION]: JSON.stringify(bootstrap(nodeId)),
  });
  clients.push(client);
  return client;
}

async function ready(a: AgentProcess): Promise<string> {
  const res = await fetch(`${a.statusBase}/healthz/ready`);
  return `${res.status} ${await res.text()}`;
}

function agentArgs(name: string, extra: string[] = []): string[] {
  return [
    '--ca-addr',
    `127.0.0.1:${securePort}`,
    '--root-cert',
    join(dir, 'root-cert.pem'),
    '--namespace',
    'shop',
    '--service-account',
    'cart',
    '--cert-dir',
    join(dir, name, 'certs'),
    '--data-dir',
    join(dir, name, 'data'),
    '--run-dir',
    join(dir, name, 'run'),
    ...extra,
  ];
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-agent-e2e-'));
  mkdirSync(join(dir, 'config'));
  const v1 = await startEchoBackend('v1', '127.0.0.7', 0);
  port = v1.port;
  backends.push(v1, await startEchoBackend('v2', '127.0.0.8', port));
  writeConfig(['127.0.0.7']);
  securePort = await freePort();
  portolan = await startServe();
  writeFileSync(join(dir, 'root-cert.pem'), await cli(['ca', 'root', '--data-dir', join(dir, 'data')]));
});

after(async () => {
  for (const c of clients) c.close();
  for (const a of extraAgents) await a.stop(5000);
  await agent?.stop(5000);
  await portolan?.stop();
  for (const b of backends) await b.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The VM's agent (node cart-app-1, enrolled with a join token) against a running serve, ready:
 * started unless it runs, so that each test has it whatever ran before.
 */
async function ensureAgent(): Promise<AgentProcess> {
  portolan ??= await startServe();
  if (agent) return agent;
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
  const started = await startAgentProcess(
    agentArgs('vm', ['--node-id', 'cart-app-1', '--grpc-bootstrap', join(dir, 'grpc-bootstrap.json')]),
    { env: { PORTOLAN_JOIN_TOKEN: token } },
  );
  agent = started;
  await eventually(async () => assert.match(await ready(started), /^200 ready/), { timeoutMs: 15_000 });
  return started;
}

test('a VM joins with a token; grpc-js and C-core route through the agent; the control plane sees its identity', async () => {
  await ensureAgent();

  const app = grpcJsClient();
  assert.equal(await callEcho(app), 'v1');
  // C-core runs long enough (40 calls, 100 ms apart) for its stream to be seen while it is open.
  const ccoreRun = ccoreEchoCalls(`xds:///echo.shop.internal:${port}`, '', '', 40, {
    bootstrap: bootstrap('cart-ccore-1'),
    intervalMs: 100,
  });
  ccoreRun.catch(() => undefined); // awaited below; a failure must not go unhandled while we poll

  // /debug/adsz: both nodes, over the secure port, under the agent's certificate.
  await eventually(
    async () => {
      const adsz = (await (await fetch(`${portolan?.httpBase ?? ''}/debug/adsz`)).json()) as {
        clients: { node: string; identity: string | null; userAgent: string }[];
      };
      const seen = Object.fromEntries(adsz.clients.map((c) => [c.node, c]));
      assert.equal(seen['cart-app-1']?.identity, ID);
      assert.match(seen['cart-app-1']?.userAgent ?? '', /gRPC Node/);
      assert.equal(seen['cart-ccore-1']?.identity, ID);
      assert.match(seen['cart-ccore-1']?.userAgent ?? '', /C-core/);
    },
    { timeoutMs: 30_000, what: 'both nodes on the secure port under the agent identity' },
  );
  const ccore = await ccoreRun;
  assert.equal(ccore.length, 40);
  assert.ok(
    ccore.every((r) => r.ok && r.backend === 'v1'),
    JSON.stringify(ccore.filter((r) => !r.ok || r.backend !== 'v1')),
  );
});

test('control plane stopped: a new client still gets its config and its calls succeed; back: an endpoint edit reaches it', async (t) => {
  const vm = await ensureAgent();
  await portolan?.stop();
  portolan = undefined;
  await eventually(async () => assert.match(await ready(vm), /control plane: unreachable/), {
    timeoutMs: 15_000,
  });
  assert.match(await ready(vm), /^200 ready\n/, 'ready: serving from the cache');

  // An app (re)started during the outage, and a C-core one.
  const restarted = grpcJsClient();
  assert.equal(await callEcho(restarted), 'v1');
  const ccore = await ccoreEchoCalls(`xds:///echo.shop.internal:${port}`, '', '', 2, {
    bootstrap: bootstrap('cart-ccore-1'),
  });
  assert.deepEqual(
    ccore.map((r) => [r.ok, r.backend]),
    [1, 2].map(() => [true, 'v1']),
  );

  portolan = await startServe();
  await eventually(async () => assert.match(await ready(vm), /control plane: connected/), {
    timeoutMs: 20_000,
  });
  // The other tests expect v1: the edit is undone, and served, when this test ends.
  t.after(async () => {
    writeConfig(['127.0.0.7']);
    await eventually(async () => assert.equal(await callEcho(restarted), 'v1'), { timeoutMs: 20_000 });
  });
  writeConfig(['127.0.0.8']);
  await eventually(async () => assert.equal(await callEcho(restarted), 'v2'), {
    timeoutMs: 20_000,
    what: 'the client started during the outage follows the edit',
  });
});

test('SDS on the Unix socket: default and ROOTCA (= portolan ca root); a root rotation pushes the new bundle', async () => {
  portolan ??= await startServe();
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
  const sdsAgent = await startAgentProcess(agentArgs('sds', ['--token', token, '--ttl', '6s']));
  extraAgents.push(sdsAgent);
  await eventually(async () => assert.match(await ready(sdsAgent), /^200 ready/), { timeoutMs: 15_000 });
  const sds = new RawSdsClient(join(dir, 'sds', 'run', 'sds.sock'), ['default', 'ROOTCA']);
  try {
    const secrets = await sds.next();
    const cert = secrets.find((s) => s.name === 'default');
    const leaf = new X509Certificate(cert?.certificateChain ?? '');
    assert.equal(leaf.subjectAltName, `URI:${ID}`);
    assert.ok(leaf.checkPrivateKey(createPrivateKey(cert?.privateKey ?? '')));
    const root = await cli(['ca', 'root', '--data-dir', join(dir, 'data')]);
    assert.equal(secrets.find((s) => s.name === 'ROOTCA')?.trustedCa?.trim(), root.trim());

    await cli(['ca', 'rotate', '--data-dir', join(dir, 'data'), '--overlap', '1h']);
    const rotated = (await cli(['ca', 'root', '--data-dir', join(dir, 'data')])).trim();
    assert.equal((rotated.match(/BEGIN CERTIFICATE/g) ?? []).length, 2);
    await eventually(
      async () => {
        const roots = (await sds.next(8000)).find((s) => s.name === 'ROOTCA');
        assert.equal(roots?.trustedCa?.trim(), rotated);
      },
      { timeoutMs: 30_000, what: 'the two-root bundle pushed on the open SDS stream at the next renewal' },
    );
  } finally {
    sds.close();
  }
});

test('a crash between writing the key and the certificate: the restarted agent keeps its certificate', async () => {
  const running = await ensureAgent();
  const certs = join(dir, 'vm', 'certs');
  const before = new X509Certificate(readFileSync(join(certs, 'cert-chain.pem'))).serialNumber;
  // grpc-js-xds clients of this agent go first: one whose xDS server vanished keeps a queued ADS
  // call (and the test process) alive after it is closed.
  for (const c of clients.splice(0)) c.close();
  await running.kill();
  agent = undefined;
  // What a crash leaves after the new key was written and before its certificate: a version
  // directory that `..data` does not name, holding a key alone.
  mkdirSync(join(certs, '..v-crashed'));
  writeFileSync(join(certs, '..v-crashed', 'key.pem'), readFileSync(join(certs, 'key.pem')), { mode: 0o600 });
  // No token this time; the bootstrap is written again, with the restarted agent's port.
  const restarted = await startAgentProcess(
    agentArgs('vm', ['--node-id', 'cart-app-1', '--grpc-bootstrap', join(dir, 'grpc-bootstrap.json')]),
  );
  agent = restarted;
  assert.ok(restarted.logs.some((l) => l.msg === 'using the certificate on disk'));
  await eventually(async () => assert.match(await ready(restarted), /^200 ready/), { timeoutMs: 15_000 });
  assert.ok(!existsSync(join(certs, '..v-crashed')), 'the half-written version is removed');
  const chain = readFileSync(join(certs, 'cert-chain.pem'), 'utf8');
  assert.equal(new X509Certificate(chain).serialNumber, before);
  assert.ok(
    new X509Certificate(chain).checkPrivateKey(createPrivateKey(readFileSync(join(certs, 'key.pem')))),
  );
  const app = grpcJsClient('cart-app-2');
  await eventually(async () => assert.equal(await callEcho(app), 'v1'), {
    timeoutMs: 20_000,
    what: 'a new client served through the restarted agent',
  });
});

test('the old layout with a mismatched pair: the agent says so and enrolls with its token', async () => {
  await ensureAgent(); // its certificate is the one of the pair
  // What the old `portolan cert` left after a crash between its two renames: a certificate and a
  // key that is not its own.
  const certs = join(dir, 'legacy', 'certs');
  mkdirSync(certs, { recursive: true });
  const vm = join(dir, 'vm', 'certs');
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(join(certs, 'cert-chain.pem'), readFileSync(join(vm, 'cert-chain.pem')));
  writeFileSync(join(certs, 'key.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
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
  const legacy = await startAgentProcess(agentArgs('legacy', ['--token', token]));
  extraAgents.push(legacy);
  await eventually(async () => assert.match(await ready(legacy), /^200 ready/), { timeoutMs: 15_000 });
  const warned = legacy.logs.find(
    (l) =>
      l.msg ===
      'the certificate files are unusable (key.pem is not the key of cert-chain.pem (mismatched pair)): enrolling with the join token',
  );
  assert.ok(warned, JSON.stringify(legacy.logs.slice(0, 5)));
  const chain = readFileSync(join(certs, 'cert-chain.pem'), 'utf8');
  assert.ok(
    new X509Certificate(chain).checkPrivateKey(createPrivateKey(readFileSync(join(certs, 'key.pem')))),
  );
  assert.ok(readdirSync(certs).includes('..data'), 'now in the atomic layout');
});
