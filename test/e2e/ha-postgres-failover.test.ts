// Two `portolan serve` replicas on one real PostgreSQL (see ha-postgres.test.ts), the failover half:
// a grpc-js-xds client and a `portolan agent` move from a replica killed -9 to the other, and
// auto-registrations made through one replica are shared and cleaned up by the leader. A file of
// its own so the two halves run side by side and each stays well inside the per-file time limit.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { callEcho, echoClientClass, startEchoBackend } from '../support/echo-backend.js';
import { startAgentProcess } from '../support/agent-process.js';
import { eventually } from '../support/eventually.js';
import { BOOTSTRAP_OPTION } from '../support/payments-server.js';
import { xdsEchoClient } from '../support/xds-client.js';
import {
  certArgs,
  database,
  getJson,
  newToken,
  ok,
  replica,
  root,
  serialOf,
  usePostgres,
  vmDir,
} from './ha-support.js';

usePostgres();

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
