// Issue #47's size figure: how long `portolan diff` takes with DIFF_SERVICES services (1,000 by
// default: one ServiceEntry file each, 10 endpoints, plus one VirtualService on svc-0) and
// DIFF_STREAMS proxyless gRPC SotW streams connected (2,000 by default; stream k watches service
// k mod services, walking LDS → RDS → CDS → EDS and ACKing, each connection from its own loopback
// address, from two load-generator processes; bench/proxyless-storm.ts's fleet). Then, DIFF_RUNS
// times each (3 by default), `portolan diff -o json` run as a process on:
// - a copy of the config directory with the VirtualService's timeout changed (the two streams
//   watching svc-0 have a route change);
// - an unchanged copy (no proxy affected).
// Reported: the server's evaluatedMs (from the answer) and the CLI's wall time from spawn to exit,
// beside the wall time of `portolan version` (the CLI's own start-up, which every command pays),
// and the server's CPU over each diff. Prints its table; docs/benchmarks.md is left as it is.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DiffView } from '../model/admin-api.js';
import { connectStorm, startGenerators, type Helper } from './load/fleet.js';
import { cpuSeconds, waitQuiet } from './load/proc.js';
import { host, logProblems, startConfigDirPortolan, type ConfigDirPortolan } from './load/service-files.js';
import { GENERATORS, proxylessStreams } from './proxyless-storm.js';
import { percentile, printTable } from './table.js';

function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

const SERVICES = envInt('DIFF_SERVICES', 1000);
const STREAMS = envInt('DIFF_STREAMS', 2000);
const RUNS = envInt('DIFF_RUNS', 3);
const STORM_TIMEOUT_MS = 300_000;
const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));

const virtualService = (timeout: string): string => `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: svc-0 }
spec:
  hosts: [${host(0)}]
  http:
    - route: [{ destination: { host: ${host(0)} } }]
      timeout: ${timeout}
`;

interface Run {
  readonly wallMs: number;
  readonly evaluatedMs: number;
  readonly serverCpuMs: number;
  readonly proxies: number;
  readonly status: number | null;
}

/** Runs the CLI; its wall time from spawn to exit, and its stdout. */
function timedCli(
  args: readonly string[],
): Promise<{ wallMs: number; status: number | null; stdout: string }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ wallMs: performance.now() - started, status, stdout });
    });
  });
}

async function diffRun(server: ConfigDirPortolan, dir: string): Promise<Run> {
  const pid = server.portolan.pid;
  const httpAddr = server.portolan.httpBase.replace(/^http:\/\//, '');
  const cpuFrom = cpuSeconds(pid);
  const run = await timedCli(['diff', '--config-dir', dir, '--http-addr', httpAddr, '-o', 'json']);
  const serverCpuMs = (cpuSeconds(pid) - cpuFrom) * 1000;
  let view: DiffView | undefined;
  try {
    view = JSON.parse(run.stdout) as DiffView;
  } catch {
    console.error(`diff-at-size: diff printed no JSON (exit ${run.status}): ${run.stdout.slice(0, 300)}`);
  }
  if (view && view.problems.length > 0)
    console.error(`diff-at-size: problems: ${JSON.stringify(view.problems.slice(0, 3))}`);
  return {
    wallMs: run.wallMs,
    evaluatedMs: view?.evaluatedMs ?? NaN,
    serverCpuMs,
    proxies: view?.proxies.length ?? NaN,
    status: run.status,
  };
}

const median = (values: readonly number[]): number =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

const ms = (n: number): string => (Number.isFinite(n) ? n.toFixed(0) : '-');

export async function diffAtSize(): Promise<void> {
  const loadAtStart = loadavg()[0] ?? 0;
  const tmp = mkdtempSync(join(tmpdir(), 'portolan-diff-bench-'));
  let generators: Helper[] = [];
  let server: ConfigDirPortolan | undefined;
  try {
    generators = startGenerators(GENERATORS);
    server = await startConfigDirPortolan(SERVICES);
    writeFileSync(join(server.configDir, 'vs-0.yaml'), virtualService('5s'));
    const storm = await connectStorm(
      generators,
      server.portolan.xdsAddress,
      proxylessStreams(STREAMS, SERVICES),
      STORM_TIMEOUT_MS,
    );
    if (storm.configured < storm.total)
      console.error(`diff-at-size: ${storm.total - storm.configured} streams not configured`);
    await waitQuiet(server.portolan.pid, 60);

    const changed = join(tmp, 'changed');
    cpSync(server.configDir, changed, { recursive: true });
    writeFileSync(join(changed, 'vs-0.yaml'), virtualService('10s'));
    const unchanged = join(tmp, 'unchanged');
    cpSync(server.configDir, unchanged, { recursive: true });

    const startup: number[] = [];
    const runs: Record<'changed' | 'unchanged', Run[]> = { changed: [], unchanged: [] };
    for (let i = 0; i < RUNS; i++) {
      startup.push((await timedCli(['version'])).wallMs);
      for (const [name, dir] of [
        ['changed', changed],
        ['unchanged', unchanged],
      ] as const) {
        await waitQuiet(server.portolan.pid, 10);
        runs[name].push(await diffRun(server, dir));
      }
    }
    const row = (what: string, r: readonly Run[]): Record<string, string> => ({
      candidate: what,
      'proxies listed': [...new Set(r.map((x) => String(x.proxies)))].join('/'),
      exit: [...new Set(r.map((x) => String(x.status)))].join('/'),
      'evaluatedMs p50': ms(median(r.map((x) => x.evaluatedMs))),
      'evaluatedMs runs': r.map((x) => ms(x.evaluatedMs)).join(', '),
      'CLI wall ms p50': ms(median(r.map((x) => x.wallMs))),
      'CLI wall runs': r.map((x) => ms(x.wallMs)).join(', '),
      'server CPU ms p50': ms(median(r.map((x) => x.serverCpuMs))),
    });
    printTable(
      `portolan diff with ${SERVICES} services (${SERVICES + 1} files) and ${storm.configured}/${STREAMS} proxyless streams connected; ` +
        `\`portolan version\` wall p50 ${ms(median(startup))} ms (the CLI's start-up); ` +
        `load average ${loadAtStart.toFixed(1)} at start, ${(loadavg()[0] ?? 0).toFixed(1)} at end; ` +
        `server log: ${logProblems(server.portolan.logs)}`,
      [row('one VirtualService changed', runs.changed), row('unchanged copy', runs.unchanged)],
    );
  } finally {
    await Promise.all(generators.map((g) => g.stop()));
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}
