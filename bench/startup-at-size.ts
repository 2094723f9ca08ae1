// Issue #50 item 4, start-up at size: `portolan serve --config-dir D` with STARTUP_SERVICES
// ServiceEntry files (10,000 by default, 10 endpoints each), from spawning the process until `/ready`
// answers 200 and until a client asking for the last service's cluster by name holds it:
// - cold: an empty --data-dir (nothing stored; every file read and parsed);
// - warm from SQLite: the same directory and the --data-dir the cold start left (its registry
//   snapshot and accepted files stored);
// - cold and warm with --store on a throwaway PostgreSQL (test/support/postgres.ts): the cold start
//   writes its snapshot behind to PostgreSQL (waited for), and the warm start is a new replica with an
//   empty --data-dir, which copies the shared snapshot before its warm start (docs/store.md).
// STARTUP_RUNS runs of each (3 by default); the median and every run are reported, with the server's
// CPU (the whole process's utime + stime, and its main thread's) from spawning to /ready: on a loaded
// machine the wall times move with the load, the CPU much less. STARTUP_SERIES=sqlite or =postgres
// runs one store's starts only; PORTOLAN_BENCH_PROFILE=DIR: each server writes a V8 CPU profile
// there when it stops; PORTOLAN_BENCH_NODE_ARGS: more node flags for each server. Writes its table into docs/benchmarks.md (the full run only).
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { CLUSTER } from '../xds/proto/type-urls.js';
import { cpuReading, type CpuReading } from './load/proc.js';
import { startPortolanProcess, type PortolanProcess } from '../test/support/portolan-process.js';
import { startPostgres, type PostgresServer } from '../test/support/postgres.js';
import { RawAdsClient, grpcNode } from '../test/support/raw-ads-client.js';
import { host, writeServiceDir } from './load/service-files.js';
import { markdownTable, percentile, printTable, writeDocSection } from './table.js';

function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

const SERVICES = envInt('STARTUP_SERVICES', 10_000);
const RUNS = envInt('STARTUP_RUNS', 3);
const START_TIMEOUT_MS = 300_000;
const SERIES = process.env.STARTUP_SERIES ?? 'both';
const PROFILE = process.env.PORTOLAN_BENCH_PROFILE;

interface Start {
  /** Spawn → /ready 200, ms. */
  readonly ready: number;
  /** Spawn → a CDS response holding the last service's cluster, ms. */
  readonly served: number;
  /** The server's CPU from its spawn to /ready 200, seconds. */
  readonly cpu: CpuReading;
}

async function until(deadline: number, probe: () => Promise<boolean>): Promise<void> {
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error('start-up: timed out');
    await sleep(5);
  }
}

/** Spawns serve with `args`, times /ready and the first cluster served, leaves it running. */
async function timedStart(args: readonly string[]): Promise<{ start: Start; server: PortolanProcess }> {
  const started = performance.now();
  const deadline = started + START_TIMEOUT_MS;
  const server = await startPortolanProcess(args, {
    timeoutMs: START_TIMEOUT_MS,
    nodeArgs: [
      ...(PROFILE ? ['--cpu-prof', '--cpu-prof-dir', PROFILE] : []),
      ...(process.env.PORTOLAN_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    ],
  });
  try {
    await until(deadline, async () => (await fetch(`${server.httpBase}/ready`)).status === 200);
    const ready = performance.now() - started;
    const cpu = cpuReading(server.pid);
    const client = new RawAdsClient(server.xdsAddress);
    try {
      const cluster = `outbound|7070||${host(SERVICES - 1)}`;
      client.send({ node: grpcNode('startup-bench'), type_url: CLUSTER, resource_names: [cluster] });
      for (;;) {
        const res = await client.next(Math.max(1, deadline - performance.now()));
        if (res.resources.length > 0) break;
      }
      return { start: { ready, served: performance.now() - started, cpu }, server };
    } finally {
      client.close();
    }
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/** Waits (bounded) until PostgreSQL holds the config directory's snapshot: every service's host. */
async function snapshotShared(url: string, hosts: number): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const deadline = performance.now() + 120_000;
    for (;;) {
      const res = await client.query<{ n: string }>('SELECT count(*) AS n FROM registry_hosts');
      const n = Number(res.rows[0]?.n ?? 0);
      if (n >= hosts || performance.now() > deadline) return n;
      await sleep(200);
    }
  } finally {
    await client.end();
  }
}

interface Series {
  readonly name: string;
  readonly starts: Start[];
}

export async function startupAtSize(): Promise<void> {
  const loadAtStart = loadavg()[0] ?? 0;
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-startup-'));
  const configDir = join(dir, 'config');
  const cold: Series = { name: 'cold (empty --data-dir), SQLite', starts: [] };
  const warm: Series = { name: "warm from SQLite (the cold start's --data-dir)", starts: [] };
  const pgCold: Series = { name: 'cold, --store PostgreSQL (empty database and --data-dir)', starts: [] };
  const pgWarm: Series = {
    name: 'warm from PostgreSQL (a new replica: empty --data-dir, the shared snapshot)',
    starts: [],
  };
  let postgres: PostgresServer | undefined;
  let shared = '';
  try {
    writeServiceDir(configDir, SERVICES);
    const serve = (dataDir: string, store?: string): string[] => [
      '--config-dir',
      configDir,
      '--data-dir',
      dataDir,
      ...(store ? ['--store', store] : []),
    ];
    for (let run = 0; run < RUNS && SERIES !== 'postgres'; run++) {
      const dataDir = join(dir, `sqlite-${run}`);
      for (const series of [cold, warm]) {
        const { start, server } = await timedStart(serve(dataDir));
        series.starts.push(start);
        await server.stop();
      }
    }
    if (SERIES !== 'sqlite') postgres = await startPostgres();
    for (let run = 0; run < RUNS && postgres; run++) {
      const url = await postgres.createDatabase(`startup_${run}`);
      const first = await timedStart(serve(join(dir, `pg-cold-${run}`), url));
      pgCold.starts.push(first.start);
      const rows = await snapshotShared(url, SERVICES);
      shared = `${rows} of ${SERVICES}`;
      await first.server.stop();
      const second = await timedStart(serve(join(dir, `pg-warm-${run}`), url));
      pgWarm.starts.push(second.start);
      await second.server.stop();
    }
  } finally {
    await postgres?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  report([cold, warm, pgCold, pgWarm], shared, loadAtStart);
}

const s = (msValue: number): string => `${(msValue / 1000).toFixed(2)} s`;

function report(series: readonly Series[], shared: string, loadAtStart: number): void {
  const med = (values: readonly number[]): number =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  const cpu = (x: Series, of: (c: CpuReading) => number): string =>
    `${s(1000 * med(x.starts.map((r) => of(r.cpu))))} (${x.starts.map((r) => s(1000 * of(r.cpu))).join(', ')})`;
  const rows: Record<string, string>[] = series
    .filter((x) => x.starts.length > 0)
    .map((x) => ({
      'start-up': x.name,
      '/ready 200, median (each run)': `${s(med(x.starts.map((r) => r.ready)))} (${x.starts.map((r) => s(r.ready)).join(', ')})`,
      "the last service's cluster served, median (each run)": `${s(med(x.starts.map((r) => r.served)))} (${x.starts.map((r) => s(r.served)).join(', ')})`,
      'server CPU to /ready, whole process, median (each run)': cpu(x, (c) => c.whole),
      'main thread': cpu(x, (c) => c.main),
      target: x.name.startsWith('warm') ? '≤ 2 s' : '',
    }));
  rows.push({
    'start-up': "hosts in PostgreSQL's registry_hosts before the warm start (the last run)",
    '/ready 200, median (each run)': shared,
    "the last service's cluster served, median (each run)": '',
    'server CPU to /ready, whole process, median (each run)': '',
    'main thread': '',
    target: String(SERVICES),
  });
  rows.push({
    'start-up': 'machine load average (1 min) at the start / the end (2 cores, shared)',
    '/ready 200, median (each run)': `${loadAtStart.toFixed(2)} / ${(loadavg()[0] ?? 0).toFixed(2)}`,
    "the last service's cluster served, median (each run)": '',
    'server CPU to /ready, whole process, median (each run)': '',
    'main thread': '',
    target: '',
  });
  const setup =
    `startup-at-size: portolan serve --config-dir D (child process; D: ${SERVICES} ServiceEntry files × 10 endpoints, one directory), ` +
    `defaults otherwise; from spawning the process; ${RUNS} runs each; node ${process.version}, ${new Date().toISOString()}.`;
  printTable(setup, rows);
  // A quick check at another size leaves the page's figures alone.
  if (SERVICES === 10_000 && SERIES === 'both')
    writeDocSection('startup-at-size', `${setup}\n\n${markdownTable(rows)}`);
  else console.log('(not the full size: docs/benchmarks.md left as it was)');
}
