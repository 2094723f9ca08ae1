// `portolan agent` with several workloads (`--workload`, issue #49): its resident memory with one
// workload and with five, each enrolled with its own join token, connected to the control plane
// with its own certificate, and holding one local client (a raw ADS stream on its socket, EDS of one
// service, ACKing). `portolan serve` and the agent run as child processes (the real CLI); RSS is the
// agent process's VmRSS from /proc, read once every workload is ready and its client served.
// `npm run bench -- agent-workloads`, or `node dist/bench/agent-workloads.js` after a build.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startAgentProcess } from '../test/support/agent-process.js';
import { eventually } from '../test/support/eventually.js';
import { startPortolanProcess } from '../test/support/portolan-process.js';
import { RawAdsClient, grpcNode } from '../test/support/raw-ads-client.js';
import { freePort } from '../test/support/workload-certs.js';
import { printTable } from './table.js';

const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const run = promisify(execFile);
const HOST = 'echo.bench.internal';
const CLUSTER = `outbound|50051||${HOST}`;
const EDS = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';

async function cli(args: string[]): Promise<string> {
  return (await run(process.execPath, [MAIN, ...args], { timeout: 30_000 })).stdout;
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) / 1024;
}

/** The agent's RSS with `n` workloads, each ready with one local client served. */
async function measure(dir: string, securePort: number, n: number): Promise<number> {
  const base = join(dir, `agent-${n}`);
  mkdirSync(base);
  const flags: string[] = [];
  for (let i = 0; i < n; i++) {
    const sa = `svc${i}`;
    const token = await cli([
      ...['token', 'create', '--namespace', 'shop', '--service-account', sa],
      ...['--data-dir', join(dir, 'data')],
    ]);
    writeFileSync(join(base, `${sa}.token`), token);
    flags.push('--workload', `name=${sa},service-account=${sa},token-file=${join(base, `${sa}.token`)}`);
  }
  const agent = await startAgentProcess(
    [
      ...[
        '--ca-addr',
        `127.0.0.1:${securePort}`,
        '--root-cert',
        join(dir, 'root.pem'),
        '--namespace',
        'shop',
      ],
      ...[
        '--cert-dir',
        join(base, 'certs'),
        '--data-dir',
        join(base, 'data'),
        '--run-dir',
        join(base, 'run'),
      ],
      ...['--no-dns', ...flags],
    ],
    { tcpXds: false },
  );
  const clients: RawAdsClient[] = [];
  try {
    await eventually(async () => (await fetch(`${agent.statusBase}/healthz/ready`)).status === 200, {
      timeoutMs: 60_000,
      what: `${n} workloads ready`,
    });
    for (let i = 0; i < n; i++) {
      const c = new RawAdsClient(`unix:${join(base, 'run', `svc${i}`, 'xds.sock')}`);
      clients.push(c);
      c.send({ node: grpcNode(`app-${i}`), type_url: EDS, resource_names: [CLUSTER] });
    }
    for (const c of clients) c.ack(await c.next(30_000), [CLUSTER]);
    await new Promise((resolve) => setTimeout(resolve, 2000)); // let the GC and the cache files settle
    return rssMiB(agent.pid);
  } finally {
    for (const c of clients) c.close();
    await agent.stop(10_000);
  }
}

export async function agentWorkloadsBench(counts: readonly number[] = [1, 5]): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-workloads-'));
  mkdirSync(join(dir, 'config'));
  writeFileSync(
    join(dir, 'config', 'echo.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [${HOST}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.7 }]
`,
  );
  const securePort = await freePort();
  const portolan = await startPortolanProcess([
    ...['--config-dir', join(dir, 'config'), '--data-dir', join(dir, 'data')],
    ...['--secure-xds-addr', `127.0.0.1:${securePort}`],
  ]);
  try {
    writeFileSync(join(dir, 'root.pem'), await cli(['ca', 'root', '--data-dir', join(dir, 'data')]));
    const rows: Record<string, string>[] = [];
    for (const n of counts) {
      const rss = await measure(dir, securePort, n);
      rows.push({ workloads: String(n), 'agent RSS MiB': rss.toFixed(1) });
    }
    printTable(
      'portolan agent --workload: resident memory (each workload enrolled, connected, one local client)',
      rows,
    );
  } finally {
    await portolan.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await agentWorkloadsBench();
