// VM onboarding through the agent (docs/agent.md), two numbers:
//
// - probe → out of rotation: `portolan serve` and `portolan agent --group` as child processes, a
//   WorkloadGroup whose tcpSocket probe (periodSeconds 1, failureThreshold 1) checks a health port
//   on the VM's address, a grpc-js-xds client calling the service (the VM and a second endpoint)
//   back to back. Closing the health port (the application still answers) is the failure; the time
//   until the client's last call to the VM is how long clients keep routing to it. Five rounds.
// - DNS proxy queries per second: the agent's DnsProxy in a worker thread with a 1,000-name table,
//   UDP clients in the main thread keeping 64 queries in flight for 5 s, A queries for mesh names
//   (answered from the table) and, separately, for other names (forwarded to a stand-in resolver
//   in the main thread).
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import * as grpc from '@grpc/grpc-js';
import { register as registerXds } from '@grpc/grpc-js-xds';
import dnsPacket from 'dns-packet';
import { startAgentProcess } from '../test/support/agent-process.js';
import { splitAddress, startTestResolver } from '../test/support/dns.js';
import { echoClientClass, startEchoBackend, type EchoClient } from '../test/support/echo-backend.js';
import { eventually } from '../test/support/eventually.js';
import { startPortolanProcess } from '../test/support/portolan-process.js';
import { printTable, summarize } from './table.js';

const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const run = promisify(execFile);
const VM_IP = '127.0.0.40';
const OTHER_IP = '127.0.0.41';

async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

function listen(host: string, port: number): Promise<Server> {
  const server = createServer((s) => s.destroy());
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

export async function probeBench(rounds = 5): Promise<void> {
  registerXds();
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-onboard-'));
  mkdirSync(join(dir, 'config'));
  const vm = await startEchoBackend('vm', VM_IP, 0);
  const port = vm.port;
  const other = await startEchoBackend('other', OTHER_IP, port);
  const healthPort = await freePort(VM_IP);
  let health = await listen(VM_IP, healthPort);
  writeFileSync(
    join(dir, 'config', 'echo.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [echo.bench.internal]
  ports: [{ number: ${port}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  workloadSelector: { labels: { app: echo } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: other, namespace: shop }
spec: { address: ${OTHER_IP}, labels: { app: echo } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: echo-vms, namespace: shop }
spec:
  metadata: { labels: { app: echo } }
  probe: { periodSeconds: 1, timeoutSeconds: 1, failureThreshold: 1, tcpSocket: { port: ${healthPort} } }
`,
  );
  const securePort = await freePort();
  const serve = await startPortolanProcess([
    '--config-dir',
    join(dir, 'config'),
    '--data-dir',
    join(dir, 'data'),
    '--secure-xds-addr',
    `127.0.0.1:${securePort}`,
    '--secure-xds-sans',
    'localhost,127.0.0.1',
  ]);
  const cli = async (args: string[]): Promise<string> =>
    (await run(process.execPath, [MAIN, ...args], { timeout: 30_000 })).stdout;
  writeFileSync(join(dir, 'root.pem'), await cli(['ca', 'root', '--data-dir', join(dir, 'data')]));
  const token = (
    await cli([
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      'echo',
      '--data-dir',
      join(dir, 'data'),
    ])
  ).trim();
  const agent = await startAgentProcess(
    [
      ...['--ca-addr', `127.0.0.1:${securePort}`, '--root-cert', join(dir, 'root.pem')],
      ...['--namespace', 'shop', '--service-account', 'echo', '--group', 'echo-vms', '--instance-ip', VM_IP],
      ...['--cert-dir', join(dir, 'certs'), '--data-dir', join(dir, 'agent'), '--run-dir', join(dir, 'run')],
      ...['--grpc-bootstrap', join(dir, 'bootstrap.json'), '--no-dns'],
    ],
    { env: { PORTOLAN_JOIN_TOKEN: token } },
  );
  const Client = echoClientClass();
  const client: EchoClient = new Client(
    `xds:///echo.bench.internal:${port}`,
    grpc.credentials.createInsecure(),
    {
      'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config': readFileSync(
        join(dir, 'bootstrap.json'),
        'utf8',
      ),
    },
  );
  const answers: { at: number; backend: string }[] = [];
  let calling = true;
  const loop = (async () => {
    while (calling) {
      const backend = await new Promise<string>((resolve) =>
        client.Echo({ message: 'x' }, { deadline: Date.now() + 2000 }, (err, reply) =>
          resolve(err ? 'error' : (reply?.backend ?? '')),
        ),
      );
      answers.push({ at: performance.now(), backend });
    }
  })();
  const vmAnswered = (since: number): boolean => answers.some((a) => a.at > since && a.backend === 'vm');
  const outMs: number[] = [];
  let errors = 0;
  try {
    for (let i = 0; i < rounds; i++) {
      const back = performance.now();
      await eventually(() => vmAnswered(back), { timeoutMs: 30_000, what: 'the VM in rotation' });
      await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 700));
      const t0 = performance.now();
      await new Promise<void>((resolve) => health.close(() => resolve()));
      // Out of rotation: no call has reached the VM for a full second.
      await eventually(
        () => {
          const last = [...answers].reverse().find((a) => a.backend === 'vm');
          return performance.now() - (last?.at ?? t0) > 1000;
        },
        { timeoutMs: 30_000, intervalMs: 20, what: 'the VM out of rotation' },
      );
      const last = [...answers].reverse().find((a) => a.at > t0 && a.backend === 'vm');
      outMs.push((last?.at ?? t0) - t0);
      health = await listen(VM_IP, healthPort);
    }
    errors = answers.filter((a) => a.backend === 'error').length;
  } finally {
    calling = false;
    await loop;
    client.close();
    health.close();
    await agent.stop(5000);
    await serve.stop();
    await vm.stop();
    await other.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  printTable('Probe failure → the client stops routing to the VM (health port closed, period 1 s)', [
    { measurement: 'health port closed → last call to the VM (ms)', ...summarize(outMs) },
    { measurement: 'calls made / failed', n: String(answers.length), p50: '', p90: '', max: String(errors) },
  ]);
}

const WORKER = `
import { parentPort, workerData } from 'node:worker_threads';
const { DnsProxy } = await import(workerData.proxy);
const { DnsNameTable } = await import(workerData.table);
const { silentLogger } = await import(workerData.logger);
const table = new DnsNameTable('bench');
const names = {};
for (let i = 0; i < 1000; i++) names['svc-' + i + '.bench.internal'] = { ips: ['10.1.' + (i >> 8) + '.' + (i & 255)] };
table.update(names);
const proxy = new DnsProxy({ host: '127.0.0.1', port: 0, table, logger: silentLogger, upstreams: () => [workerData.upstream] });
await proxy.start();
parentPort.postMessage(proxy.address);
parentPort.on('message', async () => { await proxy.stop(); parentPort.postMessage('stopped'); });
`;

/** Queries per second with `inFlight` outstanding for `ms`; `name(i)` is the i-th query's name. */
async function load(
  address: string,
  name: (i: number) => string,
  ms: number,
  inFlight = 64,
): Promise<number> {
  const { host, port } = splitAddress(address);
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  let sent = 0;
  let answered = 0;
  const end = performance.now() + ms;
  const send = (): void => {
    if (performance.now() > end) return;
    const i = sent++;
    socket.send(
      dnsPacket.encode({
        type: 'query',
        id: i & 0xffff,
        flags: dnsPacket.RECURSION_DESIRED,
        questions: [{ type: 'A', name: name(i) }],
      }),
      port,
      host,
    );
  };
  socket.on('message', () => {
    answered += 1;
    send();
  });
  const started = performance.now();
  for (let i = 0; i < inFlight; i++) send();
  await new Promise((resolve) => setTimeout(resolve, ms + 200));
  socket.close();
  return answered / ((Math.min(performance.now(), end) - started) / 1000);
}

export async function dnsBench(): Promise<void> {
  const resolver = await startTestResolver('192.0.2.1');
  const url = (p: string): string => new URL(p, import.meta.url).href;
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: {
      proxy: url('../agent/dns/dns-proxy.js'),
      table: url('../agent/dns/name-table.js'),
      logger: url('../log/logger.js'),
      upstream: splitAddress(resolver.address),
    },
  });
  const address = await new Promise<string>((resolve) => worker.once('message', resolve));
  const mesh = await load(address, (i) => `svc-${i % 1000}.bench.internal`, 5000);
  const forwarded = await load(address, (i) => `host-${i}.example.org`, 5000);
  worker.postMessage('stop');
  await new Promise((resolve) => worker.once('message', resolve));
  await worker.terminate();
  await resolver.stop();
  printTable('DNS proxy throughput (UDP, 64 queries in flight, 5 s each)', [
    { queries: 'mesh names (answered from the 1,000-name table)', 'per second': mesh.toFixed(0) },
    { queries: 'other names (forwarded to a loopback resolver)', 'per second': forwarded.toFixed(0) },
  ]);
}
