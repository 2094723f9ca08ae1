// Two `portolan serve` replicas on one real PostgreSQL (Debian `postgresql`, started by the test on
// a free loopback port as the `postgres` user, stopped by pid), with the real commands: one CA root
// for both, a token created once enrolls on either replica and renews on the other, a single-use
// token raced on both issues one certificate, a revocation closes the secure stream on the replica
// the workload is connected to, and with PostgreSQL stopped both replicas keep serving xDS and
// renewing known workloads while new enrollments are refused with UNAVAILABLE, until it returns.
// Then failover: a real @grpc/grpc-js-xds client whose bootstrap names both replicas moves to B
// when A is killed -9, keeps routing, and follows an endpoint edit made after the failover; the
// singleton jobs' lease passes to B. The same for a `portolan agent` given both replicas
// (--xds-addr A,B), with a proxyless client behind it. Auto-registration shared: a VM registered
// through A is an endpoint for B's clients, and B (leading) removes it after the grace once A dies.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import pg from 'pg';
import { openAdsStream, type OpenAdsStream } from '../integration/ca-helpers.js';
import { callEcho, echoClientClass, startEchoBackend } from '../support/echo-backend.js';
import { startAgentProcess } from '../support/agent-process.js';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { BOOTSTRAP_OPTION } from '../support/payments-server.js';
import { xdsEchoClient } from '../support/xds-client.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'portolan-ha-'));
let postgres: PostgresServer;
let databases = 0;

before(async () => {
  postgres = await startPostgres();
});
after(async () => {
  await postgres?.destroy();
  rmSync(root, { recursive: true, force: true });
});

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function portolan(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function ok(args: readonly string[]): Promise<string> {
  const run = await portolan(args);
  assert.equal(run.code, 0, `portolan ${args.join(' ')}: ${run.stderr}`);
  return run.stdout;
}

type Replica = PortolanProcess & { readonly secure: string; readonly name: string };

async function replica(
  t: TestContext,
  name: string,
  store: string,
  args: readonly string[] = [],
): Promise<Replica> {
  const p = await startPortolanProcess([
    '--registries',
    'mock',
    '--data-dir',
    join(root, `${store.split('/').pop() ?? 'db'}-${name}`),
    '--store',
    store,
    '--replica-id',
    name,
    ...args,
  ]);
  t.after(() => p.stop());
  const serving = p.logs.find((l) => l.msg === 'portolan serving');
  return Object.assign(p, { secure: String(serving?.secureXdsAddress), name });
}

async function database(): Promise<string> {
  databases += 1;
  return postgres.createDatabase(`ha_${databases}`);
}

async function newToken(store: string, sa: string, uses = 1): Promise<string> {
  return (
    await ok([
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      sa,
      '--uses',
      String(uses),
      '--store',
      store,
    ])
  ).trim();
}

/** A VM directory with the CA's root (as `portolan ca root --store` prints it). */
async function vmDir(store: string, name: string): Promise<string> {
  const vm = mkdtempSync(join(root, `vm-${name}-`));
  writeFileSync(join(vm, 'first-root.pem'), await ok(['ca', 'root', '--store', store]));
  return vm;
}

function certArgs(secure: string, vm: string, extra: readonly string[] = []): string[] {
  return [
    'cert',
    '--ca-addr',
    secure,
    '--root-cert',
    join(vm, 'first-root.pem'),
    '--out',
    join(vm, 'out'),
    '--once',
    ...extra,
  ];
}

function serialOf(vm: string): string {
  return new X509Certificate(readFileSync(join(vm, 'out', 'cert-chain.pem'))).serialNumber;
}

function secureStream(secure: string, vm: string, sa: string): OpenAdsStream {
  const out = join(vm, 'out');
  return openAdsStream(
    secure,
    {
      rootPem: readFileSync(join(out, 'root-cert.pem'), 'utf8'),
      certChainPem: readFileSync(join(out, 'cert-chain.pem'), 'utf8'),
      keyPem: readFileSync(join(out, 'key.pem'), 'utf8'),
    },
    { id: `${sa}-vm`, metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: sa } },
  );
}

async function getJson(url: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  assert.equal(res.status, 200, `${url}: ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

test('two replicas on one PostgreSQL: one root, a token enrolls on either and renews on the other, a single-use token raced on both issues one certificate', async (t) => {
  const store = await database();
  const [a, b] = await Promise.all([replica(t, 'a', store), replica(t, 'b', store)]);
  const rootA = await ok(['ca', 'root', '--store', store]);
  assert.match(rootA, /BEGIN CERTIFICATE/);
  assert.equal(await ok(['ca', 'root', '--store', store]), rootA, 'portolan ca root is the same every time');

  // Created with the command, enrolled through B, renewed through A (the enrollment is shared).
  const vm = await vmDir(store, 'orders');
  await ok(certArgs(b.secure, vm, ['--token', await newToken(store, 'orders')]));
  const firstSerial = serialOf(vm);
  // Both replicas serve certificates that chain to the one root (the CLI checks the chain).
  assert.equal(readFileSync(join(vm, 'out', 'root-cert.pem'), 'utf8').trim(), rootA.trim());
  await ok(certArgs(a.secure, vm));
  assert.notEqual(serialOf(vm), firstSerial, 'renewed on the other replica');

  // A single-use token, used on both replicas at once: exactly one certificate.
  const token = await newToken(store, 'payments');
  const [vmA, vmB] = await Promise.all([vmDir(store, 'race-a'), vmDir(store, 'race-b')]);
  const runs = await Promise.all([
    portolan(certArgs(a.secure, vmA, ['--token', token])),
    portolan(certArgs(b.secure, vmB, ['--token', token])),
  ]);
  assert.deepEqual(
    runs.map((r) => r.code === 0).sort(),
    [false, true],
    `exactly one enrollment succeeds: ${runs.map((r) => r.stderr).join(' | ')}`,
  );
  assert.match(runs.find((r) => r.code !== 0)?.stderr ?? '', /used up/);

  // Each replica heartbeats; either lists both.
  const view = await eventually(async () => {
    const v = await getJson(`${a.httpBase}/debug/replicas`);
    const names = (v.replicas as { replica: string }[]).map((r) => r.replica).sort();
    assert.deepEqual(names, ['a', 'b']);
    return v;
  });
  assert.equal((view.store as { state: string }).state, 'up');
  const leaders = await Promise.all(
    [a, b].map(async (r) => (await getJson(`${r.httpBase}/debug/replicas`)).leader),
  );
  assert.equal(leaders.filter(Boolean).length, 1, 'one replica leads the singleton jobs');
});

test('a revocation written through the shared store closes the secure stream on the replica the workload is connected to', async (t) => {
  const store = await database();
  const [a, b] = await Promise.all([replica(t, 'a', store), replica(t, 'b', store)]);
  const vm = await vmDir(store, 'cart');
  await ok(certArgs(b.secure, vm, ['--token', await newToken(store, 'cart')]));
  const stream = secureStream(a.secure, vm, 'cart');
  t.after(() => stream.close());
  await eventually(() => assert.ok(stream.responses.length > 0, 'the stream to A is serving'));
  // The proxies connected to A appear in /debug/replicas (from A's heartbeat), seen from B.
  await eventually(async () => {
    const v = await getJson(`${b.httpBase}/debug/replicas`);
    const rowA = (v.replicas as { replica: string; proxies: string[] }[]).find((r) => r.replica === 'a');
    assert.deepEqual(rowA?.proxies, ['cart-vm']);
  });
  const proxyStatus = await ok(['proxy-status', '--http-addr', b.httpBase.replace('http://', '')]);
  assert.match(proxyStatus, /replica b( \(leader\))?, shared store postgres up/);
  assert.match(proxyStatus, /^a\s+\S+ ago\s+cart-vm\s*$/m, 'the proxy connected to A, from B');

  const started = performance.now();
  await ok(['cert', 'revoke', '--serial', serialOf(vm), '--reason', 'stolen', '--store', store]);
  const status = await eventually(
    () => {
      assert.ok(stream.isEnded(), 'the secure stream on A is closed');
      return stream.ended;
    },
    { timeoutMs: 15_000, intervalMs: 20 },
  );
  t.diagnostic(
    `cert revoke (shared store) → stream on replica A closed: ${(performance.now() - started).toFixed(0)} ms`,
  );
  assert.equal(status.code, grpc.status.UNAUTHENTICATED);
  // Renewal is refused on either replica.
  for (const r of [a, b]) assert.match((await portolan(certArgs(r.secure, vm))).stderr, /revoked/);
});

test('PostgreSQL stopped for 30 s: both replicas keep serving xDS and renewing known workloads; new enrollments get UNAVAILABLE; when it returns, a new enrollment works', async (t) => {
  const store = await database();
  // Each replica watches its own copy of the config directory, beside the mock registry.
  const dirs = ['a', 'b'].map((n) => {
    const dir = join(root, `outage-config-${n}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  });
  const withConfig = (dir: string): string[] => ['--registries', 'mock,config', '--config-dir', dir];
  const [a, b] = await Promise.all([
    replica(t, 'a', store, withConfig(dirs[0] ?? '')),
    replica(t, 'b', store, withConfig(dirs[1] ?? '')),
  ]);
  const vm = await vmDir(store, 'known');
  await ok(certArgs(a.secure, vm, ['--token', await newToken(store, 'known')]));
  await ok(certArgs(b.secure, vm)); // B has read this enrollment too
  const pending = await newToken(store, 'late');
  const late = await vmDir(store, 'late');

  await postgres.stop();
  let restarted = false;
  t.after(async () => {
    if (!restarted) await postgres.start();
  });
  const stoppedAt = performance.now();
  // Both replicas say so, and stay ready for xDS.
  for (const r of [a, b]) {
    await eventually(
      async () => {
        const res = await fetch(`${r.httpBase}/ready`, { signal: AbortSignal.timeout(5000) });
        assert.equal(res.status, 200);
        assert.match(await res.text(), /store: postgres unreachable/);
      },
      { timeoutMs: 20_000 },
    );
    const registryz = await getJson(`${r.httpBase}/debug/registryz`);
    assert.equal((registryz.store as { state: string }).state, 'unreachable');
  }
  // A new enrollment is refused, saying why.
  const refused = await portolan(certArgs(b.secure, late, ['--token', pending]));
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /unreachable/);
  // A known workload renews on both replicas.
  for (const r of [a, b]) await ok(certArgs(r.secure, vm));
  // xDS goes on: a mock service added on A reaches a secure stream on A.
  const stream = secureStream(a.secure, vm, 'known');
  t.after(() => stream.close());
  const clusters = await eventually(() => {
    const last = stream.responses.at(-1);
    assert.ok(last, 'secure xDS is served without the database');
    return last.resources;
  });
  const res = await fetch(`${a.httpBase}/mock/services/down.shop.internal`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ports: [{ name: 'http', number: 80, protocol: 'HTTP' }] }),
    signal: AbortSignal.timeout(5000),
  });
  assert.ok(res.status < 300, `mock service added: ${res.status}`);
  const withMock = await eventually(() => {
    const grown = stream.responses.find((r) => r.resources > clusters);
    assert.ok(grown, "the new service's cluster is pushed while PostgreSQL is down");
    return grown.resources;
  });
  // And a ServiceEntry written to the config directories (every replica's copy) reaches it too.
  for (const dir of dirs)
    writeFileSync(
      join(dir, 'outage.yaml'),
      `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: outage, namespace: default }
spec:
  hosts: [outage.ha.internal]
  ports: [{ number: 80, name: http, protocol: HTTP }]
  resolution: STATIC
  endpoints: [{ address: 10.9.0.1 }]
`,
    );
  await eventually(
    () =>
      assert.ok(
        stream.responses.some((r) => r.resources > withMock),
        "the config directory's new service is pushed while PostgreSQL is down",
      ),
    { timeoutMs: 15_000 },
  );
  const left = 30_000 - (performance.now() - stoppedAt);
  if (left > 0) await sleep(left);
  await ok(certArgs(a.secure, vm)); // still renewing after 30 s

  await postgres.start();
  restarted = true;
  const enrolled = await eventually(
    () =>
      portolan(certArgs(b.secure, late, ['--token', pending])).then((r) => {
        assert.equal(r.code, 0, r.stderr);
        return r;
      }),
    { timeoutMs: 30_000, intervalMs: 1000 },
  );
  assert.equal(enrolled.code, 0);
  for (const r of [a, b])
    await eventually(
      async () => {
        const registryz = await getJson(`${r.httpBase}/debug/registryz`);
        assert.equal((registryz.store as { state: string }).state, 'up');
      },
      { timeoutMs: 20_000 },
    );
});

test('failover: a grpc-js-xds client connected to A moves to B when A is killed -9, keeps routing, and follows an edit made after; B takes the lead', async (t) => {
  const store = await database();
  const b1 = await startEchoBackend('b1', '127.0.0.1');
  const b2 = await startEchoBackend('b2', '127.0.0.2', b1.port);
  t.after(() => Promise.all([b1.stop(), b2.stop()]));
  const host = 'echo.ha.internal';
  const config = (address: string, port: number): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${host}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: ${address}, ports: { grpc: ${port} } }]
`;
  // Each replica has its own copy of the config directory, with the same content (as each
  // machine would, from the same deployment).
  const dirs = ['a', 'b'].map((n) => {
    const dir = join(root, `failover-config-${n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'echo.yaml'), config(b1.address, b1.port));
    return dir;
  });
  const serveArgs = (dir: string): string[] => ['--registries', 'config', '--config-dir', dir];
  const a = await replica(t, 'a', store, serveArgs(dirs[0] ?? ''));
  const b = await replica(t, 'b', store, serveArgs(dirs[1] ?? ''));
  // The bootstrap names both replicas in one target, as a DNS name with both addresses would.
  const client = xdsEchoClient(
    `xds:///${host}:50051`,
    `ipv4:${a.xdsAddress},${b.xdsAddress}`,
    'failover-client',
  );
  t.after(() => client.close());
  await eventually(async () => assert.equal(await callEcho(client), 'b1'), { timeoutMs: 15_000 });
  await eventually(async () => {
    const v = await getJson(`${a.httpBase}/debug/replicas`);
    assert.equal(v.leader, true, 'A (started first) leads');
  });

  const reached: string[] = [];
  const failures: string[] = [];
  let calling = true;
  const caller = (async () => {
    while (calling) {
      try {
        reached.push(await callEcho(client, 3000));
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
      await sleep(20);
    }
  })();
  try {
    const killedAt = performance.now();
    process.kill(a.pid, 'SIGKILL');
    // The edit after the failover, on every replica's copy (A's is gone with it).
    for (const dir of dirs) writeFileSync(join(dir, 'echo.yaml'), config(b2.address, b2.port));
    await eventually(() => assert.deepEqual(reached.slice(-10), Array(10).fill('b2')), { timeoutMs: 30_000 });
    t.diagnostic(`A killed → client routed by B's push: ${(performance.now() - killedAt).toFixed(0)} ms`);
    await eventually(
      async () =>
        assert.equal((await getJson(`${b.httpBase}/debug/replicas`)).leader, true, 'B took the lead'),
      { timeoutMs: 20_000 },
    );
    t.diagnostic(`A killed → B leads: ${(performance.now() - killedAt).toFixed(0)} ms`);
  } finally {
    calling = false;
    await caller;
    // Closed while B still serves: a client closed mid-reconnect keeps a retry timer alive.
    client.close();
  }
  assert.deepEqual(failures, [], 'no call failed across the failover');
});

test('failover: a `portolan agent` on A (enrolled through B) moves to B when A is killed -9; the proxyless client behind it keeps routing and gets an edit made after', async (t) => {
  const store = await database();
  const b1 = await startEchoBackend('b1', '127.0.0.1');
  const b2 = await startEchoBackend('b2', '127.0.0.2', b1.port);
  t.after(() => Promise.all([b1.stop(), b2.stop()]));
  const host = 'echo.agent-ha.internal';
  const config = (address: string, port: number): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${host}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: ${address}, ports: { grpc: ${port} } }]
`;
  const dirs = ['a', 'b'].map((n) => {
    const dir = join(root, `agent-failover-config-${n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'echo.yaml'), config(b1.address, b1.port));
    return dir;
  });
  const serveArgs = (dir: string): string[] => ['--registries', 'config', '--config-dir', dir];
  const a = await replica(t, 'a', store, serveArgs(dirs[0] ?? ''));
  const b = await replica(t, 'b', store, serveArgs(dirs[1] ?? ''));

  const vm = await vmDir(store, 'agent');
  const token = await newToken(store, 'cart');
  const agent = await startAgentProcess(
    [
      // Enrolls through B (first in its CA list); xDS on A first, B next: the flags an operator
      // gives when the replicas are not behind one DNS name.
      '--ca-addr',
      `${b.secure},${a.secure}`,
      '--xds-addr',
      `${a.secure},${b.secure}`,
      '--root-cert',
      join(vm, 'first-root.pem'),
      '--namespace',
      'shop',
      '--service-account',
      'cart',
      '--node-id',
      'cart-vm-1',
      '--cert-dir',
      join(vm, 'certs'),
      '--data-dir',
      join(vm, 'data'),
      '--run-dir',
      join(vm, 'run'),
      '--grpc-bootstrap',
      join(vm, 'grpc-bootstrap.json'),
    ],
    { env: { PORTOLAN_JOIN_TOKEN: token } },
  );
  t.after(() => agent.stop(5000));
  const ready = async (): Promise<string> => {
    const res = await fetch(`${agent.statusBase}/healthz/ready`, { signal: AbortSignal.timeout(5000) });
    return `${res.status} ${await res.text()}`;
  };
  await eventually(async () => assert.match(await ready(), new RegExp(`connected to ${a.secure}`)), {
    timeoutMs: 20_000,
  });
  const Client = echoClientClass();
  const client = new Client(`xds:///${host}:50051`, grpc.credentials.createInsecure(), {
    [BOOTSTRAP_OPTION]: readFileSync(join(vm, 'grpc-bootstrap.json'), 'utf8'),
  });
  t.after(() => client.close());
  await eventually(async () => assert.equal(await callEcho(client), 'b1'), { timeoutMs: 15_000 });

  const reached: string[] = [];
  const failures: string[] = [];
  let calling = true;
  const caller = (async () => {
    while (calling) {
      try {
        reached.push(await callEcho(client, 3000));
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
      await sleep(20);
    }
  })();
  try {
    const killedAt = performance.now();
    process.kill(a.pid, 'SIGKILL');
    await eventually(async () => assert.match(await ready(), new RegExp(`connected to ${b.secure}`)), {
      timeoutMs: 30_000,
    });
    t.diagnostic(`A killed → agent connected to B: ${(performance.now() - killedAt).toFixed(0)} ms`);
    // The edit after the failover (A's copy is gone with it): only B can bring it to the agent.
    for (const dir of dirs) writeFileSync(join(dir, 'echo.yaml'), config(b2.address, b2.port));
    await eventually(() => assert.deepEqual(reached.slice(-10), Array(10).fill('b2')), { timeoutMs: 30_000 });
    t.diagnostic(
      `A killed → client behind the agent routed by B's push: ${(performance.now() - killedAt).toFixed(0)} ms`,
    );
    // A CA list whose first replica is dead: the request moves on to the next (`portolan cert`
    // and the agent's renewals share the client).
    const late = await vmDir(store, 'late');
    await ok(certArgs(`${a.secure},${b.secure}`, late, ['--token', await newToken(store, 'late')]));
    assert.ok(serialOf(late), 'enrolled through B with A dead first in the list');
    const adsz = (await getJson(`${b.httpBase}/debug/adsz`)) as { clients: { node: string }[] };
    assert.ok(
      adsz.clients.some((c) => c.node === 'cart-vm-1'),
      `B serves the client's node through the agent: ${JSON.stringify(adsz.clients.map((c) => c.node))}`,
    );
  } finally {
    calling = false;
    await caller;
    // Closed while the agent still serves: a client closed mid-reconnect keeps a retry timer alive.
    client.close();
  }
  assert.deepEqual(failures, [], 'no call failed across the failover');
});

test('auto-registration is shared: a VM registered through A is an endpoint for a client of B; when A dies, the leader removes it after the grace', async (t) => {
  const store = await database();
  const vmIp = '127.0.0.41';
  const vmBackend = await startEchoBackend('vm', vmIp);
  t.after(() => vmBackend.stop());
  const host = 'echo.vm-ha.internal';
  const dirs = ['a', 'b'].map((n) => {
    const dir = join(root, `autoreg-config-${n}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'echo.yaml'),
      `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [${host}]
  ports: [{ number: ${vmBackend.port}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  workloadSelector: { labels: { app: echo-vm } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: echo-vms, namespace: shop }
spec:
  metadata: { labels: { app: echo-vm } }
  template: { serviceAccount: echo }
`,
    );
    return dir;
  });
  const serveArgs = (dir: string): string[] => [
    '--registries',
    'config',
    '--config-dir',
    dir,
    '--auto-registration-grace',
    '3s',
  ];
  const a = await replica(t, 'a', store, serveArgs(dirs[0] ?? ''));
  const b = await replica(t, 'b', store, serveArgs(dirs[1] ?? ''));
  const vm = await vmDir(store, 'autoreg');
  // Connected to A only: when A dies the VM has no replica, and its entry must go after the grace.
  const agent = await startAgentProcess(
    [
      '--ca-addr',
      a.secure,
      '--root-cert',
      join(vm, 'first-root.pem'),
      '--namespace',
      'shop',
      '--service-account',
      'echo',
      '--node-id',
      'echo-vm-1',
      '--cert-dir',
      join(vm, 'certs'),
      '--data-dir',
      join(vm, 'data'),
      '--run-dir',
      join(vm, 'run'),
      '--group',
      'echo-vms',
      '--instance-ip',
      vmIp,
    ],
    { env: { PORTOLAN_JOIN_TOKEN: await newToken(store, 'echo') } },
  );
  t.after(() => agent.stop(5000));
  const client = xdsEchoClient(`xds:///${host}:${vmBackend.port}`, b.xdsAddress, 'autoreg-client');
  try {
    await eventually(async () => assert.equal(await callEcho(client, 2000), 'vm'), { timeoutMs: 20_000 });
  } finally {
    // Closed while it routes: a grpc-js-xds client closed with no endpoints keeps a timer alive.
    client.close();
  }
  const registered = async (): Promise<{ entry: string; replica?: string }[]> =>
    ((await getJson(`${b.httpBase}/debug/registryz`)).autoRegistered as {
      entry: string;
      replica?: string;
    }[]) ?? [];
  assert.deepEqual(
    (await registered()).map((r) => r.replica),
    ['a'],
    'B lists the VM as held by A',
  );

  const killedAt = performance.now();
  process.kill(a.pid, 'SIGKILL');
  // Not before the grace (3 s) after A's last heartbeat (every 3 s)...
  await sleep(2000);
  assert.equal((await registered()).length, 1, 'the entry outlives its replica for the grace');
  // ...and gone after it, removed by the leader (B, once A's lease is gone).
  await eventually(async () => assert.deepEqual(await registered(), []), { timeoutMs: 30_000 });
  t.diagnostic(
    `A killed → its VM's entry removed by the leader: ${(performance.now() - killedAt).toFixed(0)} ms`,
  );
});

test('a database from a newer Portolan is refused by serve and by the commands, naming both versions', async (t) => {
  const store = await database();
  await ok(['ca', 'root', '--store', store]); // creates the schema
  const client = new pg.Client({ connectionString: store });
  await client.connect();
  try {
    await client.query('UPDATE portolan_schema SET version = 99');
  } finally {
    await client.end();
  }
  const listed = await portolan(['token', 'list', '--store', store]);
  assert.equal(listed.code, 2);
  assert.match(listed.stderr, /schema version 99 is newer than this Portolan understands/);
  await assert.rejects(
    () => replica(t, 'new', store),
    (err: unknown) => /schema version 99 is newer/.test(String(err)),
  );
});
