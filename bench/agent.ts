// `portolan agent` on a VM: its memory with N local xDS streams, and the time from a control-plane
// restart to every local client having the config edited during the outage. `portolan serve` and
// `portolan agent` run as child processes (the real CLI), the agent enrolled with a join token; the
// local clients are raw ADS streams (gRPC nodes, EDS of one service, ACKing) on the agent's
// plaintext port. RSS is the agent process's VmRSS from /proc.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { decodeAny } from '../xds/proto/protos.js';
import { startAgentProcess, type AgentProcess } from '../test/support/agent-process.js';
import { eventually } from '../test/support/eventually.js';
import { startPortolanProcess, type PortolanProcess } from '../test/support/portolan-process.js';
import { RawAdsClient, grpcNode, type DecodedResponse } from '../test/support/raw-ads-client.js';
import { printTable, summarize } from './table.js';

const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const run = promisify(execFile);
const HOST = 'echo.bench.internal';
const CLUSTER = `outbound|50051||${HOST}`;
const EDS = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';

async function cli(args: string[]): Promise<string> {
  return (await run(process.execPath, [MAIN, ...args], { timeout: 30_000 })).stdout;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0) / 1024;
}

/** One local client: EDS of the service, ACKing; remembers the addresses of the last response. */
class LocalClient {
  readonly ads: RawAdsClient;
  addresses = '';

  constructor(address: string, nodeId: string) {
    this.ads = new RawAdsClient(address);
    this.ads.send({ node: grpcNode(nodeId), type_url: EDS, resource_names: [CLUSTER] });
  }

  /** Reads what has arrived (waiting up to `ms` for one response), ACKing each. */
  async drain(ms: number): Promise<void> {
    let res: DecodedResponse | undefined;
    try {
      res = await this.ads.next(ms);
    } catch {
      return;
    }
    for (; res; res = await this.ads.next(0).catch(() => undefined)) {
      this.addresses = res.resources
        .map((r) => JSON.stringify(decodeAny(r.type_url, r.value)).match(/127\.0\.0\.\d+/g) ?? [])
        .flat()
        .join(',');
      this.ads.ack(res, [CLUSTER]);
    }
  }
}

export async function agentBench(streams = 50, restarts = 3): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-agent-'));
  mkdirSync(join(dir, 'config'));
  const config = (address: string): void =>
    writeFileSync(
      join(dir, 'config', 'echo.yaml'),
      `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [${HOST}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: ${address} }]
`,
    );
  config('127.0.0.7');
  const securePort = await freePort();
  const serve = (): Promise<PortolanProcess> =>
    startPortolanProcess([
      ...['--config-dir', join(dir, 'config'), '--data-dir', join(dir, 'data')],
      ...['--secure-xds-addr', `127.0.0.1:${securePort}`],
    ]);
  let portolan: PortolanProcess | undefined = await serve();
  let agent: AgentProcess | undefined;
  const clients: LocalClient[] = [];
  try {
    writeFileSync(join(dir, 'root.pem'), await cli(['ca', 'root', '--data-dir', join(dir, 'data')]));
    const token = (
      await cli([
        ...['token', 'create', '--namespace', 'shop', '--service-account', 'cart'],
        ...['--data-dir', join(dir, 'data')],
      ])
    ).trim();
    const running = await startAgentProcess([
      ...['--ca-addr', `127.0.0.1:${securePort}`, '--root-cert', join(dir, 'root.pem')],
      ...['--token', token, '--namespace', 'shop', '--service-account', 'cart'],
      ...['--cert-dir', join(dir, 'certs'), '--data-dir', join(dir, 'agent'), '--run-dir', join(dir, 'run')],
    ]);
    agent = running;
    const ready = async (): Promise<string> => (await fetch(`${running.statusBase}/healthz/ready`)).text();
    await eventually(async () => /control plane: connected/.test(await ready()), { timeoutMs: 30_000 });
    const idle = rssMiB(running.pid);
    for (let i = 0; i < streams; i++) clients.push(new LocalClient(running.xdsAddress, `bench-${i}`));
    const converged = (address: string) => async (): Promise<boolean> => {
      await Promise.all(clients.map((c) => c.drain(50)));
      return clients.every((c) => c.addresses === address);
    };
    await eventually(converged('127.0.0.7'), { timeoutMs: 60_000, intervalMs: 0 });
    await new Promise((resolve) => setTimeout(resolve, 2000)); // let the GC and the cache file settle
    const loaded = rssMiB(running.pid);

    // Restart: stop the control plane, edit during the outage, start it; until every client has it.
    const restart: number[] = [];
    const total: number[] = [];
    let address = '127.0.0.7';
    for (let i = 0; i < restarts; i++) {
      await portolan.stop();
      portolan = undefined;
      await eventually(async () => /control plane: unreachable/.test(await ready()), { timeoutMs: 30_000 });
      address = address === '127.0.0.7' ? '127.0.0.8' : '127.0.0.7';
      config(address);
      const t0 = performance.now();
      portolan = await serve();
      const serving = performance.now();
      await eventually(converged(address), { timeoutMs: 60_000, intervalMs: 0 });
      const done = performance.now();
      restart.push(done - serving);
      total.push(done - t0);
    }
    const r = summarize(restart);
    const t = summarize(total);
    printTable(
      `portolan agent: ${streams} local SotW streams (raw ADS, EDS, ACKing) through one agent; ` +
        `${restarts} control-plane restarts, an endpoint edited during each outage`,
      [
        {
          streams: String(streams),
          'RSS idle MiB': idle.toFixed(1),
          [`RSS ${streams} streams MiB`]: loaded.toFixed(1),
          'spawn→converged p50 ms': t.p50 ?? '',
          'spawn→converged max ms': t.max ?? '',
          'serving→converged p50 ms': r.p50 ?? '',
          'serving→converged max ms': r.max ?? '',
        },
      ],
    );
  } finally {
    for (const c of clients) c.ads.close();
    await agent?.stop(5000);
    await portolan?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
