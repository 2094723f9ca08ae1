// End to end, several workloads on one VM under one agent (issue #49), every component real:
// `portolan serve` with its CA, a WorkloadGroup and a ServiceEntry each for `cart` and `web`; one
// `portolan agent --workload cart… --workload web…` (the CLI, a child process stopped by PID) whose
// workloads enroll with their own join tokens; the two echo backends on the VM's instance IP. Each
// SDS socket serves only its own workload's SPIFFE identity; a raw client on cart's xDS socket that
// claims web's service account is refused; both workloads register at the VM's address, each with its
// own probe; the real @grpc/grpc-js-xds client with cart's bootstrap (its socket) calls both services,
// and the control plane sees its stream under cart's certificate; stopping web's backend takes only
// web's endpoint out of rotation, starting it brings it back; gRPC C-core does the same through web's
// socket, seen as web.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { RawSdsClient } from '../integration/agent-helpers.js';
import { startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import { ccoreEchoCalls } from '../support/ccore-client.js';
import type { CallStream } from '../support/call-stream.js';
import { startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { startGrpcJsEchoStream } from '../support/grpc-js-stream.js';
import { eventually } from '../support/eventually.js';
import { LocalAdsConnection, localNode } from '../support/local-ads-connection.js';
import { portolanCli as cli } from '../support/portolan-cli.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { freePort } from '../support/workload-certs.js';

const VM_IP = '127.0.0.49';
const ID = (sa: string): string => `spiffe://cluster.local/ns/shop/sa/${sa}`;
const ENTRY = (workload: string): string => `shop/${workload}-vms-127-0-0-49`;
const NAMES = ['cart', 'web'] as const;
type Name = (typeof NAMES)[number];

let dir: string;
let portolan: PortolanProcess | undefined;
let agent: AgentProcess | undefined;
const backends = new Map<Name, EchoBackend>();
const ports = new Map<Name, number>();
const streams: CallStream[] = [];
const connections: LocalAdsConnection[] = [];

const runDir = (): string => join(dir, 'vm', 'run');
const socket = (w: Name, kind: 'xds' | 'sds'): string => join(runDir(), w, `${kind}.sock`);

interface Registered {
  entry: string;
  node: string;
  address: string;
  state: string;
  health: string;
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

/** Each workload's auto-registered entry: `node address state health`. */
async function entries(): Promise<Record<Name, string>> {
  const view = await registryz();
  return Object.fromEntries(
    NAMES.map((w) => {
      const r = view.autoRegistered.find((x) => x.entry === ENTRY(w));
      return [w, r ? `${r.node} ${r.address} ${r.state} ${r.health}` : 'none'];
    }),
  ) as Record<Name, string>;
}

/** The endpoints the control plane sends for each service. */
async function endpoints(): Promise<Record<string, string[]>> {
  const config = (await registryz()).registries.find((r) => r.name === 'config');
  return Object.fromEntries(
    NAMES.map((w) => {
      const svc = config?.services.find((s) => s.hostname === `${w}.shop.internal`);
      return [w, (svc?.endpoints ?? []).map((e) => `${e.address} ${e.health}`)];
    }),
  );
}

function grpcBootstrap(w: Name): { node: Record<string, unknown>; xds_servers: { server_uri: string }[] } {
  return JSON.parse(readFileSync(join(runDir(), w, 'grpc-bootstrap.json'), 'utf8')) as ReturnType<
    typeof grpcBootstrap
  >;
}

/** grpc-js-xds calling `service` on and on, from a process of its own, with `w`'s bootstrap. */
function grpcJsStream(w: Name, service: Name): CallStream {
  const stream = startGrpcJsEchoStream(`xds:///${service}.shop.internal:${ports.get(service) ?? 0}`, '', '', {
    bootstrap: grpcBootstrap(w),
    intervalMs: 50,
    timeoutMs: 5000,
  });
  streams.push(stream);
  return stream;
}

/** What a call stream's calls got from index `from` on: the backend, or the error. */
function answered(stream: CallStream, from = 0): string[] {
  return stream.results.slice(from).map((r) => (r.ok ? (r.backend ?? '') : `error: ${r.details ?? ''}`));
}

async function adsClients(): Promise<{ node: string; identity: string | null; userAgent: string }[]> {
  const view = (await (await fetch(`${portolan?.httpBase ?? ''}/debug/adsz`)).json()) as {
    clients: Awaited<ReturnType<typeof adsClients>>;
  };
  return view.clients;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-workloads-e2e-'));
  mkdirSync(join(dir, 'config'));
  for (const w of NAMES) {
    const backend = await startEchoBackend(w, VM_IP, 0);
    backends.set(w, backend);
    ports.set(w, backend.port);
  }
  const yaml = NAMES.map(
    (w) => `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: ${w}-vms, namespace: shop }
spec:
  metadata: { labels: { app: ${w} } }
  template: { serviceAccount: ${w} }
  probe: { periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 1, tcpSocket: { port: ${ports.get(w) ?? 0} } }
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: ${w}, namespace: shop }
spec:
  hosts: [${w}.shop.internal]
  ports: [{ number: ${ports.get(w) ?? 0}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  workloadSelector: { labels: { app: ${w} } }
`,
  ).join('---\n');
  writeFileSync(join(dir, 'config', 'shop.yaml'), yaml);
  const securePort = await freePort();
  portolan = await startPortolanProcess([
    '--config-dir',
    join(dir, 'config'),
    '--data-dir',
    join(dir, 'data'),
    '--secure-xds-addr',
    `127.0.0.1:${securePort}`,
    '--secure-xds-sans',
    'localhost,127.0.0.1',
  ]);
  writeFileSync(join(dir, 'root-cert.pem'), await cli(['ca', 'root', '--data-dir', join(dir, 'data')]));
  const workloadFlags: string[] = [];
  for (const w of NAMES) {
    const token = await cli([
      ...['token', 'create', '--namespace', 'shop', '--service-account', w],
      ...['--data-dir', join(dir, 'data')],
    ]);
    // As `echo TOKEN > FILE` leaves it: the trailing newline is ignored.
    writeFileSync(join(dir, `${w}.token`), `${token.trim()}\n`, { mode: 0o600 });
    workloadFlags.push(
      '--workload',
      `name=${w},service-account=${w},token-file=${join(dir, `${w}.token`)},group=${w}-vms`,
    );
  }
  agent = await startAgentProcess(
    [
      ...['--ca-addr', `127.0.0.1:${securePort}`, '--root-cert', join(dir, 'root-cert.pem')],
      ...['--namespace', 'shop', '--instance-ip', VM_IP, '--no-dns'],
      ...['--cert-dir', join(dir, 'vm', 'certs'), '--data-dir', join(dir, 'vm', 'data')],
      ...['--run-dir', runDir(), '--grpc-bootstrap', join(runDir(), 'grpc-bootstrap.json')],
      ...workloadFlags,
    ],
    { tcpXds: false },
  );
  await eventually(
    async () => {
      const res = await fetch(`${agent?.statusBase ?? ''}/healthz/ready`);
      return res.status === 200;
    },
    { timeoutMs: 20_000, what: 'the agent ready: both workloads with a certificate and connected' },
  );
});

after(async () => {
  for (const s of streams) await s.stop();
  for (const c of connections) c.close();
  await agent?.stop(5000);
  await portolan?.stop();
  for (const b of backends.values()) await b.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('readiness and the status port report each workload', async () => {
  const body = await (await fetch(`${agent?.statusBase ?? ''}/healthz/ready`)).text();
  for (const w of NAMES) assert.match(body, new RegExp(`^${w}: certificate: ${ID(w)} valid until`, 'm'));
  const listed = (await (await fetch(`${agent?.statusBase ?? ''}/debug/workloads`)).json()) as {
    name: string;
    identity: string;
    xds: string[];
    ready: boolean;
  }[];
  assert.deepEqual(
    listed.map((w) => [w.name, w.identity, w.xds, w.ready]),
    NAMES.map((w) => [w, ID(w), [`unix:${socket(w, 'xds')}`], true]),
  );
  assert.equal(grpcBootstrap('cart').xds_servers[0]?.server_uri, `unix:${socket('cart', 'xds')}`);
  assert.equal(grpcBootstrap('web').node.id, `web.${hostname()}`);
});

test("each SDS socket serves only its own workload's identity", async () => {
  for (const w of NAMES) {
    const sds = new RawSdsClient(socket(w, 'sds'), ['default', 'ROOTCA']);
    try {
      const secrets = await sds.next();
      const cert = secrets.find((s) => s.name === 'default');
      assert.ok(cert?.certificateChain, `${w}: a certificate`);
      const leaf = new X509Certificate(cert.certificateChain);
      assert.equal(leaf.subjectAltName, `URI:${ID(w)}`, `${w}'s socket serves ${w}'s certificate only`);
    } finally {
      sds.close();
    }
  }
});

test("a socket is an identity: cart's socket refuses web's service account, and its streams reach the control plane as cart", async () => {
  const c = new LocalAdsConnection(`unix:${socket('cart', 'xds')}`);
  connections.push(c);
  const claim = c.open({ node: localNode('intruder', { SERVICE_ACCOUNT: 'web' }), type_url: CLUSTER });
  const refused = await claim.ended();
  assert.equal(refused.code, grpc.status.PERMISSION_DENIED);
  assert.match(refused.details, /claims SERVICE_ACCOUNT=web, but this agent is spiffe:\/\/.*\/sa\/cart/);
  // A node that says nothing is given cart's identity, and the control plane verifies cart's certificate.
  const plain = c.open({ node: localNode('cart-raw-1'), type_url: CLUSTER });
  await plain.next();
  await eventually(
    async () => (await adsClients()).find((x) => x.node === 'cart-raw-1')?.identity === ID('cart'),
    { what: "the raw client's stream seen under cart's certificate" },
  );
  plain.cancel();
});

test("both workloads register at the VM's address; cart's bootstrap calls both; web's probe takes only web out of rotation and back; C-core through web's socket", async () => {
  await eventually(
    async () =>
      assert.deepEqual(await entries(), {
        cart: `agent/cart.${hostname()} ${VM_IP} connected HEALTHY`,
        web: `agent/web.${hostname()} ${VM_IP} connected HEALTHY`,
      }),
    { timeoutMs: 20_000, what: 'both workloads registered, their probes passing' },
  );
  const cartPort = ports.get('cart') ?? 0;
  const webPort = ports.get('web') ?? 0;
  assert.deepEqual(await endpoints(), { cart: [`${VM_IP} HEALTHY`], web: [`${VM_IP} HEALTHY`] });

  // grpc-js-xds in processes of their own (test/support/grpc-js-call-child.ts says why), both with
  // cart's bootstrap: cart's socket.
  const toCart = grpcJsStream('cart', 'cart');
  const toWeb = grpcJsStream('cart', 'web');
  await eventually(() => answered(toCart).includes('cart'), { timeoutMs: 20_000, what: 'grpc-js → cart' });
  await eventually(() => answered(toWeb).includes('web'), { timeoutMs: 20_000, what: 'grpc-js → web' });
  await eventually(
    async () => {
      const mine = (await adsClients()).filter((x) => x.node === `cart.${hostname()}`);
      return mine.length > 0 && mine.every((x) => x.identity === ID('cart') && /gRPC Node/.test(x.userAgent));
    },
    { what: "grpc-js's streams seen under cart's certificate" },
  );

  // web's application stops (gracefully, between calls): web's probe fails, web's endpoint goes
  // UNHEALTHY, cart's stays HEALTHY and every call to cart is answered meanwhile.
  const cartFrom = toCart.results.length;
  await backends.get('web')?.drain();
  backends.delete('web');
  await eventually(async () => (await entries()).web.endsWith('UNHEALTHY'), {
    timeoutMs: 15_000,
    what: "web's probe failure reported",
  });
  assert.deepEqual(await endpoints(), { cart: [`${VM_IP} HEALTHY`], web: [`${VM_IP} UNHEALTHY`] });
  assert.match((await entries()).cart, / HEALTHY$/);
  const webStatus = (await (
    await fetch(`${agent?.statusBase ?? ''}/debug/workload?workload=web`)
  ).json()) as { group: string; healthy: boolean; lastCheck: { message: string } };
  assert.deepEqual([webStatus.group, webStatus.healthy], ['web-vms', false]);
  assert.match(webStatus.lastCheck.message, new RegExp(`tcp ${VM_IP}:${webPort}: .*ECONNREFUSED`));
  const cartSeen = toCart.results.length;
  await eventually(() => toCart.results.length >= cartSeen + 10, { what: '10 more calls to cart' });
  assert.deepEqual(
    answered(toCart, cartFrom).filter((a) => a !== 'cart'),
    [],
    'cart stays in rotation',
  );

  // Back: web's probe passes again and web answers again.
  backends.set('web', await startEchoBackend('web', VM_IP, webPort));
  await eventually(async () => (await entries()).web.endsWith(' HEALTHY'), {
    timeoutMs: 15_000,
    what: "web's probe passing again",
  });
  const webFrom = toWeb.results.length;
  await eventually(() => answered(toWeb, webFrom).includes('web'), {
    timeoutMs: 20_000,
    what: 'calls reaching web again',
  });
  for (const s of streams.splice(0)) await s.stop();

  // gRPC C-core with web's bootstrap (web's socket) reaches both services, and is seen as web.
  const bootstrap = grpcBootstrap('web');
  const ccoreNode = { ...bootstrap.node, id: 'web-ccore-1' };
  const ccoreToCart = ccoreEchoCalls(`xds:///cart.shop.internal:${cartPort}`, '', '', 30, {
    bootstrap: { ...bootstrap, node: ccoreNode },
    intervalMs: 100,
  });
  ccoreToCart.catch(() => undefined); // awaited below
  await eventually(
    async () => {
      const seen = (await adsClients()).find((x) => x.node === 'web-ccore-1');
      return seen?.identity === ID('web') && /C-core/.test(seen.userAgent);
    },
    { timeoutMs: 20_000, what: "C-core's stream seen under web's certificate" },
  );
  const toCartResults = await ccoreToCart;
  assert.ok(
    toCartResults.every((r) => r.ok && r.backend === 'cart'),
    JSON.stringify(toCartResults),
  );
  const toWebResults = await ccoreEchoCalls(`xds:///web.shop.internal:${webPort}`, '', '', 10, {
    bootstrap: { ...bootstrap, node: ccoreNode },
  });
  assert.ok(
    toWebResults.every((r) => r.ok && r.backend === 'web'),
    JSON.stringify(toWebResults),
  );
});

test('the two forms do not mix: a one-line usage error, exit 2', async () => {
  const failed = await cli([
    ...[
      'agent',
      '--ca-addr',
      '127.0.0.1:1',
      '--root-cert',
      join(dir, 'root-cert.pem'),
      '--namespace',
      'shop',
    ],
    ...[
      '--service-account',
      'cart',
      '--workload',
      `name=web,service-account=web,token-file=${join(dir, 'web.token')}`,
    ],
  ]).then(
    () => undefined,
    (err: { code?: number; stderr?: string }) => err,
  );
  assert.equal(failed?.code, 2);
  const lines = (failed?.stderr ?? '').trim().split('\n');
  assert.match(lines[0] ?? '', /^error: --workload and --service-account do not mix/);
  assert.equal(lines.length, 2, `one line and the help hint: ${failed?.stderr ?? ''}`);
});
