// Issue #50's ten-thousand-proxy rows: `portolan serve --config-dir D` (a child process; D one flat
// directory of STORM_10K_SERVICES ServiceEntry files × 10 endpoints, 10,000 by default) and
// STORM_10K_STREAMS proxyless gRPC SotW streams (10,000 by default; stream k watches service
// k mod services) over HTTP/2 connections of 100 streams, each dialled from its own loopback address,
// from two load-generator processes. In one run:
// - the connect storm, until every stream holds its config, against the raw grpc-js server
//   (bench/load/raw-ads-server.ts replaying Portolan's first-round responses): STORM_10K_ROUNDS
//   rounds each (3 by default, the first a warm-up), interleaved;
// - server RSS once the first storm has settled (the streams still open), minus before it, per
//   stream, for both servers; no way to force a collection is exposed, so "settled" is after a quiet
//   period (a second with ≤ 50 ms of CPU);
// - with every stream connected again: churn at 20 changes/s for 10 s, change i rewriting
//   svc-(i mod 200)'s file, change → every watching stream p99;
// - a DestinationRule for `*.churn.internal` (every service; every stream's cluster changes), created
//   and then edited: from the write until all streams hold a new CDS response;
// - RSS in steady state after those, and the server's heap from its /metrics.
// CPU is the whole process's (every thread), the main thread's beside it. Small sizes check the
// harness: STORM_10K_STREAMS=1000 STORM_10K_SERVICES=1000. Writes its table into docs/benchmarks.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { churnFiles, editsOf, type ChurnOutcome } from './load/file-churn.js';
import {
  connectStorm,
  Helper,
  RAW_MAIN,
  receivedBy,
  resetStreams,
  startGenerators,
  type StormResult,
} from './load/fleet.js';
import type { GeneratorCaptured, GeneratorClusters, ToGenerator } from './load/load-generator.js';
import { heapUsedBytes } from './load/metrics.js';
import { alive, cpuReading, cpuSince, rssBytes, waitQuiet, type CpuReading } from './load/proc.js';
import { host, logProblems, startConfigDirPortolan, type ConfigDirPortolan } from './load/service-files.js';
import { wallNow } from './load/wire-lite.js';
import { GENERATORS, proxylessStreams } from './proxyless-storm.js';
import { markdownTable, percentile, printTable, writeDocSection } from './table.js';

function envInt(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

const STREAMS = envInt('STORM_10K_STREAMS', 10_000);
const SERVICES = envInt('STORM_10K_SERVICES', STREAMS);
const ROUNDS = Math.max(2, envInt('STORM_10K_ROUNDS', 3));
const PER_CONNECTION = 100;
const STORM_TIMEOUT_MS = 300_000;
const CHURN_RATE = 20;
const CHURN_SECONDS = 10;
/** The churned services: svc-0 … svc-(SPREAD - 1), each watched by the streams k ≡ i mod SERVICES. */
const SPREAD = Math.min(200, SERVICES);
const RULE_TIMEOUT_MS = 60_000;

interface Round extends StormResult {
  readonly cpu: CpuReading;
  readonly responses: number;
}

interface Server {
  readonly name: string;
  readonly pid: number;
  readonly address: string;
  readonly rounds: Round[];
  rssBefore: number;
  rssAfter: number;
}

async function stormRound(server: Server, generators: readonly Helper[], capture = false): Promise<void> {
  const batches = proxylessStreams(STREAMS, SERVICES, (k) => k % SERVICES < SPREAD);
  const cpuFrom = cpuReading(server.pid);
  const from = await receivedBy(generators);
  const storm = await connectStorm(generators, server.address, batches, STORM_TIMEOUT_MS, { capture });
  const cpu = cpuSince(cpuFrom, server.pid);
  const to = await receivedBy(generators);
  server.rounds.push({ ...storm, cpu, responses: to.responses - from.responses });
  if (storm.configured < storm.total)
    console.error(`storm-10k: ${server.name}: ${storm.total - storm.configured} streams not configured`);
}

async function closeRound(server: Server, generators: readonly Helper[]): Promise<void> {
  await resetStreams(generators);
  await sleep(500);
  await waitQuiet(server.pid, 20);
}

/** The first round: RSS before it and once it settled with the streams open. */
async function firstRound(
  server: Server,
  generators: readonly Helper[],
  onSettled?: () => Promise<void>,
): Promise<void> {
  await waitQuiet(server.pid, 60);
  server.rssBefore = rssBytes(server.pid);
  await stormRound(server, generators, onSettled !== undefined);
  await waitQuiet(server.pid, 30);
  server.rssAfter = rssBytes(server.pid);
  await onSettled?.();
  await closeRound(server, generators);
}

async function captured(generators: readonly Helper[]): Promise<Record<string, string>> {
  const all = await Promise.all(
    generators.map((g) => g.ask<GeneratorCaptured>({ cmd: 'captured' } satisfies ToGenerator)),
  );
  return Object.assign({}, ...all.map((c) => c.responses)) as Record<string, string>;
}

/** A DestinationRule every service's cluster takes: its circuit breaker at `maxRequests`. */
const meshRuleYaml = (maxRequests: number): string => `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: mesh-wide }
spec:
  host: "*.churn.internal"
  trafficPolicy: { connectionPool: { http: { http2MaxRequests: ${maxRequests} } } }
`;

interface RuleOutcome {
  /** From the write until the last stream held a new CDS response, ms (NaN: not all did). */
  readonly ms: number;
  readonly reached: number;
  readonly cpu: CpuReading;
  /** The server's exit, if the rule ended it: its first error line (stderr). */
  readonly died?: string;
}

/**
 * The uncaught error the server printed (raw stderr lines in its log): its first line and the frame
 * repeated most (a recursion shows there), file paths cut to their names.
 */
function deathOf(server: ConfigDirPortolan): string {
  const raw = server.portolan.logs.map((l) => (typeof l.raw === 'string' ? l.raw : '')).filter(Boolean);
  const counts = new Map<string, number>();
  for (const l of raw.filter((x) => x.trim().startsWith('at ')))
    counts.set(l.trim(), (counts.get(l.trim()) ?? 0) + 1);
  const [frame, n] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
  const error = raw.find((l) => /Error/.test(l)) ?? raw[0] ?? 'the server exited';
  const short = frame.replace(/\(file:\/\/\/\S*\/([^/]+)\)/, '($1)');
  return n > 1 ? `${error} (${short}, ${n} times in the printed stack)` : error;
}

async function meshRule(
  server: ConfigDirPortolan,
  generators: readonly Helper[],
  maxRequests: number,
): Promise<RuleOutcome> {
  await waitQuiet(server.portolan.pid, 30);
  const cpuFrom = cpuReading(server.portolan.pid);
  const since = wallNow();
  writeFileSync(join(server.configDir, 'mesh-rule.yaml'), meshRuleYaml(maxRequests));
  const deadline = since + RULE_TIMEOUT_MS;
  const pid = server.portolan.pid;
  for (;;) {
    if (!alive(pid)) return { ms: NaN, reached: 0, cpu: { whole: NaN, main: NaN }, died: deathOf(server) };
    const all = await Promise.all(
      generators.map((g) => g.ask<GeneratorClusters>({ cmd: 'clustersSince', since } satisfies ToGenerator)),
    );
    const reached = all.reduce((n, c) => n + c.reached, 0);
    if (reached >= STREAMS || wallNow() > deadline) {
      const last = all.reduce((m, c) => Math.max(m, c.last), 0);
      if (alive(pid)) await waitQuiet(pid, 30);
      if (!alive(pid)) return { ms: NaN, reached, cpu: { whole: NaN, main: NaN }, died: deathOf(server) };
      return {
        ms: reached >= STREAMS ? last - since : NaN,
        reached,
        cpu: cpuSince(cpuFrom, server.portolan.pid),
      };
    }
    await sleep(100);
  }
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return (percentile(sorted, 50) + (sorted[Math.floor(sorted.length / 2)] ?? NaN)) / 2;
}

interface Aftermath {
  readonly churn: ChurnOutcome;
  readonly created: RuleOutcome;
  readonly edited: RuleOutcome;
  readonly rssConnected: number;
  readonly rssSteady: number;
  readonly heapConnected: number;
  readonly heapSteady: number;
}

export async function storm10k(): Promise<void> {
  const loadAtStart = loadavg()[0] ?? 0;
  const tmp = mkdtempSync(join(tmpdir(), 'portolan-storm10k-'));
  const responsesFile = join(tmp, 'responses.json');
  const helpers: Helper[] = [];
  let portolan: ConfigDirPortolan | undefined;
  try {
    const generators = startGenerators(GENERATORS);
    helpers.push(...generators);
    portolan = await startConfigDirPortolan(SERVICES);
    const p = portolan;
    const ours: Server = {
      name: 'Portolan',
      pid: p.portolan.pid,
      address: p.portolan.xdsAddress,
      rounds: [],
      rssBefore: 0,
      rssAfter: 0,
    };
    let recorded = 0;
    await firstRound(ours, generators, async () => {
      const responses = await captured(generators);
      recorded = Object.keys(responses).length;
      writeFileSync(responsesFile, JSON.stringify(responses));
    });
    const rawHelper = Helper.start(RAW_MAIN, [`outbound|7070||${host(0)}`, responsesFile]);
    helpers.push(rawHelper);
    const { port } = await rawHelper.next<{ port: number }>();
    const raw: Server = {
      name: 'raw grpc-js',
      pid: rawHelper.pid,
      address: `127.0.0.1:${port}`,
      rounds: [],
      rssBefore: 0,
      rssAfter: 0,
    };
    await firstRound(raw, generators);
    // The measured rounds, interleaved, the order alternating.
    for (let r = 1; r < ROUNDS; r++) {
      for (const server of r % 2 === 0 ? [ours, raw] : [raw, ours]) {
        await waitQuiet(server.pid, 20);
        await stormRound(server, generators);
        await closeRound(server, generators);
      }
    }
    await rawHelper.stop();
    // Every stream connected again, for the changes.
    await stormRound(ours, generators);
    await waitQuiet(ours.pid, 30);
    const rssConnected = rssBytes(ours.pid);
    const heapConnected = await heapUsedBytes(p.portolan.httpBase);
    const churn = await churnFiles(
      editsOf(p),
      generators,
      CHURN_RATE * CHURN_SECONDS,
      CHURN_RATE,
      (seq) => seq % SPREAD,
    );
    const created = await meshRule(p, generators, 1000);
    // A server the first rule ended is reported as such; the rest is not measured.
    const edited = created.died ? created : await meshRule(p, generators, 2000);
    const up = alive(ours.pid);
    if (up) await waitQuiet(ours.pid, 30);
    const after: Aftermath = {
      churn,
      created,
      edited,
      rssConnected,
      rssSteady: up ? rssBytes(ours.pid) : NaN,
      heapConnected,
      heapSteady: up ? await heapUsedBytes(p.portolan.httpBase) : NaN,
    };
    ours.rounds.pop(); // the reconnect is not a measured storm
    report(ours, raw, after, recorded, logProblems(p.portolan.logs), loadAtStart);
  } catch (err) {
    // The server's last words, if it is what failed (its log is otherwise only counted).
    if (portolan) for (const l of portolan.portolan.logs.slice(-20)) console.error(JSON.stringify(l));
    throw err;
  } finally {
    await portolan?.stop();
    for (const h of helpers) await h.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(0)} MiB`;
const kib = (b: number): string => `${(b / 1024).toFixed(1)} KiB`;
const ms = (n: number): string => (Number.isNaN(n) ? 'not all' : `${n.toFixed(0)} ms`);

function report(
  ours: Server,
  raw: Server,
  after: Aftermath,
  recorded: number,
  log: string,
  loadAtStart: number,
): void {
  const measured = (s: Server): Round[] => s.rounds.slice(1);
  const storm = (s: Server): number => median(measured(s).map((r) => r.seconds));
  const perResponse = (s: Server, which: keyof CpuReading): number =>
    median(measured(s).map((r) => (r.cpu[which] / Math.max(1, r.responses)) * 1e6));
  const rounds = (s: Server): string => s.rounds.map((r) => r.seconds.toFixed(2)).join(', ');
  const configured = (s: Server): string =>
    s.rounds.map((r) => `${r.configured}/${r.total}`).join(', ') +
    ` (errors ${s.rounds.reduce((n, r) => n + r.errors, 0)}${s.rounds.find((r) => r.firstError)?.firstError ? `, first: ${s.rounds.find((r) => r.firstError)?.firstError}` : ''})`;
  const perStream = (s: Server): number => (s.rssAfter - s.rssBefore) / STREAMS;
  const c = after.churn;
  const rule = (o: RuleOutcome): string =>
    o.died
      ? `the server exited: ${o.died}`
      : `${ms(o.ms)} (${o.reached} / ${STREAMS}; CPU ${(o.cpu.whole * 1000).toFixed(0)} ms, main thread ${(o.cpu.main * 1000).toFixed(0)} ms)`;
  const rows: Record<string, string>[] = [
    {
      measurement: `connect storm, all ${STREAMS} streams configured (median of ${ROUNDS - 1} rounds after a warm-up)`,
      Portolan: `${storm(ours).toFixed(2)} s`,
      'raw grpc-js': `${storm(raw).toFixed(2)} s`,
      target: `≤ 1.3 × the raw server's time: ${(storm(ours) / storm(raw)).toFixed(2)} ×`,
    },
    {
      measurement: 'storm time of every round, the warm-up first (s)',
      Portolan: rounds(ours),
      'raw grpc-js': rounds(raw),
      target: '',
    },
    {
      measurement: 'server CPU per response in the storm, median of the rounds: whole process / main thread',
      Portolan: `${perResponse(ours, 'whole').toFixed(0)} / ${perResponse(ours, 'main').toFixed(0)} µs`,
      'raw grpc-js': `${perResponse(raw, 'whole').toFixed(0)} / ${perResponse(raw, 'main').toFixed(0)} µs`,
      target: '',
    },
    {
      measurement: `churn at ${CHURN_RATE} changes/s for ${CHURN_SECONDS} s (svc-0 … svc-${SPREAD - 1}), all streams connected: change → every watching stream, p99 (p50 / max; missed)`,
      Portolan: `${ms(percentile(c.convergence, 99))} (${ms(percentile(c.convergence, 50))} / ${ms(c.convergence.at(-1) ?? NaN)}; ${c.missed} of ${c.changes})`,
      'raw grpc-js': '',
      target: '≤ 350 ms',
    },
    {
      measurement: `the same churn: server CPU per change, whole process / main thread (idle subtracted); bytes allocated per change, ≈ scavenges × the young generation (its /metrics)`,
      Portolan: `${c.cpuMsPerChange.toFixed(1)} / ${c.mainMsPerChange.toFixed(1)} ms; ${c.gc ? `≈ ${(c.gc.allocatedPerChange / 2 ** 20).toFixed(2)} MiB (${c.gc.scavenges} scavenges, ${c.gc.full} full)` : '–'}`,
      'raw grpc-js': '',
      target: '',
    },
    {
      measurement: `a DestinationRule for "*.churn.internal" (every stream's cluster changes) → all ${STREAMS} streams hold the new CDS: created / edited`,
      Portolan:
        after.edited === after.created
          ? `${rule(after.created)}; edited: not measured`
          : `${rule(after.created)}; ${rule(after.edited)}`,
      'raw grpc-js': '',
      target: '≤ 2 s',
    },
    {
      measurement:
        'server RSS after the first storm settled (streams open; a quiet period, no forced collection); per stream (after − before, ÷ streams)',
      Portolan: `${mib(ours.rssAfter)}; ${kib(perStream(ours))}`,
      'raw grpc-js': `${mib(raw.rssAfter)}; ${kib(perStream(raw))}`,
      target: '≤ 800 MB; ≤ 40 KB',
    },
    {
      measurement: 'server RSS before the first storm',
      Portolan: mib(ours.rssBefore),
      'raw grpc-js': mib(raw.rssBefore),
      target: '',
    },
    {
      measurement:
        'steady state, every stream reconnected after the rounds: RSS settled, its per stream (− RSS before the first storm, ÷ streams) / RSS after the churn and the two rules settled; JS heap used (its /metrics) at the same points',
      Portolan: `${mib(after.rssConnected)}, ${kib((after.rssConnected - ours.rssBefore) / STREAMS)} / ${Number.isNaN(after.rssSteady) ? '– (the server had exited)' : mib(after.rssSteady)}; ${mib(after.heapConnected)} / ${Number.isNaN(after.heapSteady) ? '–' : mib(after.heapSteady)}`,
      'raw grpc-js': '',
      target: '',
    },
    {
      measurement: 'streams configured per round',
      Portolan: configured(ours),
      'raw grpc-js': configured(raw),
      target: String(STREAMS),
    },
    {
      measurement: '(type, name) responses recorded from Portolan and replayed by the raw server',
      Portolan: String(recorded),
      'raw grpc-js': '',
      target: String(4 * Math.min(SERVICES, STREAMS)),
    },
    { measurement: 'Portolan server log', Portolan: log, 'raw grpc-js': '', target: '' },
    {
      measurement: 'machine load average (1 min) at the start / the end (2 cores, shared)',
      Portolan: `${loadAtStart.toFixed(2)} / ${(loadavg()[0] ?? 0).toFixed(2)}`,
      'raw grpc-js': '',
      target: '',
    },
  ];
  const setup =
    `storm-10k: portolan serve --config-dir D (child process; D: ${SERVICES} ServiceEntry files × 10 endpoints, one directory), defaults otherwise; ` +
    `${STREAMS} proxyless gRPC SotW streams (LDS → RDS → CDS → EDS by name, every response ACKed) over ${Math.ceil(STREAMS / PER_CONNECTION)} HTTP/2 connections, ` +
    `each from its own loopback address, from ${GENERATORS} load-generator processes on the same machine; CPU from /proc, every thread; ` +
    `node ${process.version}, ${new Date().toISOString()}.`;
  printTable(setup, rows);
  // A quick check at another size leaves the page's figures alone.
  if (STREAMS === 10_000 && SERVICES === 10_000)
    writeDocSection('storm-10k', `${setup}\n\n${markdownTable(rows)}`);
  else console.log('(not the full size: docs/benchmarks.md left as it was)');
}
