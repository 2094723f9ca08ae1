// Issue #18's churn rows, on `portolan serve --config-dir D` (a child process; D one flat directory
// of ServiceEntry files × 10 endpoints) with proxyless gRPC streams connected (bench/proxyless-storm.ts's
// streams, from two load-generator processes). Each change rewrites one service's file with an
// endpoint address that encodes the change's number; a change has reached a stream once the stream
// received that number or a later one for its service.
// (a) 2,000 streams, 1,000 services; svc-0's file rewritten 20 times/s for 10 s: change → every
//     stream watching svc-0 (streams k ≡ 0 mod 1,000: two), p99, and server CPU % meanwhile.
// (b) 200 streams (2 connections × 100, stream k watching svc-k), 1,000 and then 10,000 services;
//     10 changes/s for 10 s, change i rewriting svc-(i mod 200)'s file: server CPU per change (the
//     idle rate subtracted) and change → watching stream p99, and the 10,000/1,000 ratios. Then the
//     same changes to services no stream watches, the streams still connected (what a change costs
//     before any stream is told). Once the streams have closed, the same server's CPU per change with
//     no stream connected, at 20/s and 5/s.
// After those, (b) again in steady state: the streams reconnected, WARM_CHANGES changes at 20/s to
// the watched files first (V8 compiles the edit and push paths over the first thousand or so), then
// WARM_ROUNDS rounds as (b), reported by their median. And the same changes, cold and warm, to a bare
// edit loop in its own process (load/raw-edit-loop.ts: fs.watch, the quiet period, read, js-yaml,
// SQLite), the baseline of what a change costs on this machine and Node before Portolan does anything.
// Besides the issue's rows, on (a)'s server with its 2,000 streams: server CPU per new service (a new
// file each, NEW_SERVICES at NEW_SERVICE_RATE/s), which no stream watches, and per new DestinationRule
// (a new file each for one service's host, as many at the same rate), which changes the cluster of the
// two streams watching that host, and per new AuthorizationPolicy (a new file each, selecting one
// service's workloads), which changes no resource these streams hold: a change must cost what it
// changes, not what the cache holds.
// Writes its table into docs/benchmarks.md.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectStorm, Helper, resetStreams, startGenerators, type StormResult } from './load/fleet.js';
import { churnFiles, editsOf, type ChurnOutcome, type EditTarget } from './load/file-churn.js';
import { rssBytes, waitQuiet } from './load/proc.js';
import {
  logProblems,
  serviceYaml,
  startConfigDirPortolan,
  writeServiceDir,
  type ConfigDirPortolan,
} from './load/service-files.js';
import { heapUsedBytes } from './load/metrics.js';
import { GENERATORS, proxylessStreams, STORM_SERVICES, STORM_STREAMS } from './proxyless-storm.js';
import { markdownTable, percentile, printTable, writeDocSection } from './table.js';

const SECONDS = 10;
const STORM_RATE = 20;
const SPREAD_RATE = 10;
const SPREAD_STREAMS = 200;
/** (b)'s streams watch svc-0 … svc-199, and its unwatched run svc-500 … svc-699. */
const SPREAD_STREAMS_MIN = 700;
/** CHURN_STREAMS_SIZES=1000,2000 runs (b) at other sizes (a quick check of the harness; at least 700). */
const SIZES = (process.env.CHURN_STREAMS_SIZES ?? '1000,10000')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n >= SPREAD_STREAMS_MIN);
const NEW_SERVICES = 20;
const NEW_SERVICE_RATE = 5;
/** (b)'s streams watch svc-0 … svc-199; the unwatched run rewrites svc-500 … svc-699. */
const UNWATCHED = 500;
/** Steady state: changes made before the warm rounds, at WARM_RATE/s, and how many rounds follow. */
const WARM_CHANGES = Number(process.env.CHURN_STREAMS_WARM ?? 1000);
const WARM_RATE = 20;
const WARM_ROUNDS = 3;
const RAW_EDIT_MAIN = fileURLToPath(new URL('./load/raw-edit-loop.js', import.meta.url));

/** (b)'s change seq rewrites svc-(seq mod 200), the file stream seq mod 200 watches. */
const spreadService = (seq: number): number => seq % SPREAD_STREAMS;

async function connect(
  server: ConfigDirPortolan,
  generators: readonly Helper[],
  streams: number,
  services: number,
  record: (k: number) => boolean,
): Promise<StormResult> {
  const batches = proxylessStreams(streams, services, record);
  const storm = await connectStorm(generators, server.portolan.xdsAddress, batches, 180_000);
  if (storm.configured < storm.total)
    console.error(`churn-streams: ${storm.total - storm.configured} streams not configured`);
  return storm;
}

interface SteadyState {
  /** CPU per change over the warm-up changes (no waiting for streams), ms. */
  readonly warmUpMsPerChange: number;
  /** The rounds after the warm-up, in order. */
  readonly rounds: readonly ChurnOutcome[];
  /** The rounds' median CPU per change, ms. */
  readonly cpuMsPerChange: number;
  /** Change → watching stream over every round's changes, ms, sorted (empty without streams). */
  readonly convergence: number[];
  readonly missed: number;
}

/**
 * WARM_CHANGES changes at WARM_RATE/s, then WARM_ROUNDS rounds of (b)'s changes (waiting for
 * `generators`' streams, if any). Markers start past `markerBase`.
 */
async function steadyState(
  target: EditTarget,
  generators: readonly Helper[],
  serviceOf: (seq: number) => number,
  markerBase: number,
): Promise<SteadyState> {
  const warmUp = await churnFiles(target, [], WARM_CHANGES, WARM_RATE, serviceOf, markerBase);
  const count = SPREAD_RATE * SECONDS;
  const rounds: ChurnOutcome[] = [];
  for (let r = 0; r < WARM_ROUNDS; r++) {
    const base = markerBase + WARM_CHANGES + r * count;
    rounds.push(await churnFiles(target, generators, count, SPREAD_RATE, serviceOf, base));
  }
  const sorted = rounds.map((r) => r.cpuMsPerChange).sort((a, b) => a - b);
  return {
    warmUpMsPerChange: warmUp.cpuMsPerChange,
    rounds,
    cpuMsPerChange: sorted[Math.floor(sorted.length / 2)] ?? NaN,
    convergence: rounds.flatMap((r) => r.convergence).sort((a, b) => a - b),
    missed: rounds.reduce((n, r) => n + r.missed, 0),
  };
}

/**
 * The no-streams rows' changes: 5 s at 20/s, then 12 s at 5/s, markers past `markerBase`; `next` is
 * the first marker base after them.
 */
async function noStreamRounds(
  target: EditTarget,
  markerBase: number,
): Promise<{ readonly fast: ChurnOutcome; readonly slow: ChurnOutcome; readonly next: number }> {
  const fast = await churnFiles(target, [], STORM_RATE * 5, STORM_RATE, spreadService, markerBase);
  const slow = await churnFiles(target, [], 5 * 12, 5, spreadService, markerBase + fast.changes);
  return { fast, slow, next: markerBase + fast.changes + slow.changes };
}

interface SpreadRun {
  readonly services: number;
  readonly quiet: { readonly fast: ChurnOutcome; readonly slow: ChurnOutcome };
  readonly storm: StormResult;
  readonly churn: ChurnOutcome;
  /** (b)'s changes made to services no stream watches, the streams still connected: the config path alone. */
  readonly unwatched: ChurnOutcome;
  /** (b) again once the streams have reconnected and WARM_CHANGES changes have been made. */
  readonly steady: SteadyState;
  /**
   * Server RSS and JS heap once the first storm settled (before (b)'s changes) and after the steady
   * rounds settled: "settled" is a quiet second, since the server exposes no way to force a collection.
   */
  readonly memory: { readonly rss: readonly [number, number]; readonly heap: readonly [number, number] };
  readonly log: string;
}

/**
 * (b) at one size, then the no-streams figures on the same server once the streams have closed, then
 * (b) in steady state on reconnected streams.
 */
async function spreadAt(services: number, generators: readonly Helper[]): Promise<SpreadRun> {
  const server = await startConfigDirPortolan(services);
  try {
    const edits = editsOf(server);
    const storm = await connect(server, generators, SPREAD_STREAMS, services, () => true);
    await waitQuiet(server.portolan.pid, 30);
    const rssSettled = rssBytes(server.portolan.pid);
    const heapSettled = await heapUsedBytes(server.portolan.httpBase);
    const count = SPREAD_RATE * SECONDS;
    const churn = await churnFiles(edits, generators, count, SPREAD_RATE, spreadService);
    // The same rate over files no stream watches (svc-500 …), the streams still connected: what a
    // change costs before any stream is told, so the difference from (b) is the push and its ACKs.
    // Marker numbers continue past the earlier runs': a rewrite that repeated a file's current text
    // would be skipped unread, and measure nothing.
    const unwatched = await churnFiles(
      edits,
      [],
      count,
      SPREAD_RATE,
      (seq) => UNWATCHED + spreadService(seq),
      count,
    );
    await resetStreams(generators);
    const quiet = await noStreamRounds(edits, 2 * count);
    // Last, so the rows above are measured as before: steady state on the same server.
    await connect(server, generators, SPREAD_STREAMS, services, () => true);
    const steady = await steadyState(edits, generators, spreadService, quiet.next);
    await waitQuiet(server.portolan.pid, 30);
    const memory = {
      rss: [rssSettled, rssBytes(server.portolan.pid)] as const,
      heap: [heapSettled, await heapUsedBytes(server.portolan.httpBase)] as const,
    };
    await resetStreams(generators);
    return {
      memory,
      services,
      quiet,
      storm,
      churn,
      unwatched,
      steady,
      log: logProblems(server.portolan.logs),
    };
  } finally {
    await server.stop();
  }
}

interface RawRun {
  /** Its first changes at (b)'s rate, after loading the directory: V8 still compiling. */
  readonly cold: ChurnOutcome;
  readonly fast: ChurnOutcome;
  readonly slow: ChurnOutcome;
  readonly steady: SteadyState;
}

/** The bare edit loop (load/raw-edit-loop.ts) on a directory of SIZES[0] services: the baseline. */
async function rawEditLoop(): Promise<RawRun> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-raw-'));
  const configDir = join(dir, 'config');
  let helper: Helper | undefined;
  try {
    writeServiceDir(configDir, SIZES[0] ?? 1000);
    helper = Helper.start(RAW_EDIT_MAIN, [configDir, dir]);
    await helper.next<{ ev: 'ready' }>();
    const target: EditTarget = {
      pid: helper.pid,
      rewrite: (i, addresses) => writeFileSync(join(configDir, `svc-${i}.yaml`), serviceYaml(i, addresses)),
    };
    const cold = await churnFiles(target, [], SPREAD_RATE * SECONDS, SPREAD_RATE, spreadService);
    const { fast, slow, next } = await noStreamRounds(target, cold.changes);
    const steady = await steadyState(target, [], spreadService, next);
    return { cold, fast, slow, steady };
  } finally {
    await helper?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function churnStreams(): Promise<void> {
  const loadAtStart = loadavg()[0] ?? 0;
  const generators = startGenerators(GENERATORS);
  try {
    // (a)
    const server = await startConfigDirPortolan(STORM_SERVICES);
    let storm: StormResult;
    let one: ChurnOutcome;
    let added: ChurnOutcome;
    let rules: { readonly created: ChurnOutcome; readonly edited: ChurnOutcome };
    let policies: { readonly created: ChurnOutcome; readonly edited: ChurnOutcome };
    let log: string;
    try {
      storm = await connect(
        server,
        generators,
        STORM_STREAMS,
        STORM_SERVICES,
        (k) => k % STORM_SERVICES === 0,
      );
      one = await churnFiles(editsOf(server), generators, STORM_RATE * SECONDS, STORM_RATE, () => 0);
      // Files svc-1000, svc-1001, ...: new services, watched by no stream (no arrivals to wait for).
      added = await churnFiles(
        editsOf(server),
        [],
        NEW_SERVICES,
        NEW_SERVICE_RATE,
        (seq) => STORM_SERVICES + seq,
      );
      // Files rule-100, rule-101, ...: a DestinationRule each for a service two streams watch; then
      // the same files edited (the first round also pays for compiling the config path).
      const ruled = (seq: number): number => 100 + seq;
      const ruleRound = (base: number): Promise<ChurnOutcome> =>
        churnFiles(editsOf(server), [], NEW_SERVICES, NEW_SERVICE_RATE, ruled, 0, (seq) =>
          server.writeRule(ruled(seq), base + seq + 1),
        );
      rules = { created: await ruleRound(0), edited: await ruleRound(NEW_SERVICES) };
      // Files policy-100, ...: an AuthorizationPolicy each (a kind read wholesale), then edited.
      const policyRound = (base: number): Promise<ChurnOutcome> =>
        churnFiles(editsOf(server), [], NEW_SERVICES, NEW_SERVICE_RATE, ruled, 0, (seq) =>
          server.writePolicy(ruled(seq), base + seq + 1),
        );
      policies = { created: await policyRound(0), edited: await policyRound(NEW_SERVICES) };
      log = logProblems(server.portolan.logs);
      await resetStreams(generators);
    } finally {
      await server.stop();
    }
    // (b)
    const spread: SpreadRun[] = [];
    for (const n of SIZES) spread.push(await spreadAt(n, generators));
    const raw = await rawEditLoop();
    report(storm, one, { added, rules, policies }, log, spread, raw, loadAtStart);
  } finally {
    for (const g of generators) await g.stop();
  }
}

const ms = (n: number): string => `${n.toFixed(n < 10 ? 1 : 0)} ms`;
/** CPU per change: the whole process, the main thread beside it. */
const cpu = (o: { cpuMsPerChange: number; mainMsPerChange: number }): string =>
  `${ms(o.cpuMsPerChange)} (main thread ${ms(o.mainMsPerChange)})`;
const mib = (b: number): string => `${(b / 2 ** 20).toFixed(0)} MiB`;
const allocated = (o: ChurnOutcome): string =>
  o.gc ? `≈ ${(o.gc.allocatedPerChange / 2 ** 20).toFixed(2)} MiB` : '–';
const p = (o: ChurnOutcome, q: number): number => percentile(o.convergence, q);
const pct = (share: number): string => `${(share * 100).toFixed(0)} %`;

function report(
  storm: StormResult,
  one: ChurnOutcome,
  extra: {
    readonly added: ChurnOutcome;
    readonly rules: { readonly created: ChurnOutcome; readonly edited: ChurnOutcome };
    readonly policies: { readonly created: ChurnOutcome; readonly edited: ChurnOutcome };
  },
  log: string,
  spread: readonly SpreadRun[],
  raw: RawRun,
  loadAtStart: number,
): void {
  const [small, large] = spread;
  const rows: Record<string, string>[] = [
    {
      measurement: `churn, one file rewritten ${STORM_RATE} times/s (${STORM_STREAMS} streams, ${STORM_SERVICES} services): change → every watching stream, p99`,
      Portolan: `${ms(p(one, 99))} (server CPU ${pct(one.cpuShare)})`,
      target: '≤ 350 ms',
    },
  ];
  for (const r of spread) {
    rows.push({
      measurement: `churn at ${SPREAD_RATE} changes/s on ${SPREAD_STREAMS} streams, ${r.services} services: server CPU per change, whole process (main thread) / p99`,
      Portolan: `${cpu(r.churn)} / ${ms(p(r.churn, 99))}`,
      target: r === small ? '≤ 3 ms / ≤ 350 ms' : 'within 1.3 × of the 1,000-service figures',
    });
  }
  if (small && large) {
    rows.push({
      measurement: `ratios ${large.services} / ${small.services} services: CPU per change, whole process (main thread) / p99`,
      Portolan: `${(large.churn.cpuMsPerChange / small.churn.cpuMsPerChange).toFixed(2)} × (${(large.churn.mainMsPerChange / small.churn.mainMsPerChange).toFixed(2)} ×) / ${(p(large.churn, 99) / p(small.churn, 99)).toFixed(2)} ×`,
      target: '≤ 1.3 × / ≤ 1.5 ×',
    });
  }
  for (const r of spread) {
    rows.push({
      measurement: `server CPU per one-file change, no streams connected, ${r.services} services: at ${STORM_RATE}/s / at 5/s (main thread)`,
      Portolan: `${cpu(r.quiet.fast)} / ${cpu(r.quiet.slow)}`,
      target: '≤ 3 ms, flat from 1,000 to 10,000 services (within 1.5×)',
    });
  }
  rows.push({
    measurement: `a new service (a new file) at ${NEW_SERVICE_RATE}/s with (a)'s ${STORM_STREAMS} streams connected, ${STORM_SERVICES} services: server CPU per change`,
    Portolan: cpu(extra.added),
    target: "about an endpoint edit's (not in the issue's table)",
  });
  rows.push({
    measurement: `a DestinationRule for one service's host (two streams watch it) at ${NEW_SERVICE_RATE}/s with (a)'s ${STORM_STREAMS} streams connected, ${STORM_SERVICES} services: server CPU per change, ${NEW_SERVICES} new files (the first since start) / the same files edited`,
    Portolan: `${cpu(extra.rules.created)} / ${cpu(extra.rules.edited)}`,
    target: "about an endpoint edit's (not in the issue's table)",
  });
  rows.push({
    measurement: `an AuthorizationPolicy selecting one service's workloads (a kind read wholesale; no stream's resources change) at ${NEW_SERVICE_RATE}/s with (a)'s ${STORM_STREAMS} streams connected, ${STORM_SERVICES} services: server CPU per change, ${NEW_SERVICES} new files (the first since start) / the same files edited`,
    Portolan: `${cpu(extra.policies.created)} / ${cpu(extra.policies.edited)}`,
    target: "about an endpoint edit's (not in the issue's table)",
  });
  rows.push(
    {
      measurement: `detail (a): p50 / max; changes missed by a watching stream; streams configured; idle CPU before`,
      Portolan: `${ms(p(one, 50))} / ${ms(one.convergence.at(-1) ?? NaN)}; ${one.missed} of ${one.changes}; ${storm.configured} / ${storm.total} (errors ${storm.errors}); ${pct(one.idleShare)}`,
      target: '',
    },
    ...spread.map((r) => ({
      measurement: `detail (b), ${r.services} services: server CPU per change when the same changes go to services no stream watches (the streams connected), and (b)'s figure less that: the push and its ACKs`,
      Portolan: `${cpu(r.unwatched)}; ${ms(r.churn.cpuMsPerChange - r.unwatched.cpuMsPerChange)}`,
      target: '',
    })),
    ...spread.map((r) => ({
      measurement: `detail (b), ${r.services} services: p50 / max; missed; streams configured; server CPU while changing; idle`,
      Portolan: `${ms(p(r.churn, 50))} / ${ms(r.churn.convergence.at(-1) ?? NaN)}; ${r.churn.missed} of ${r.churn.changes}; ${r.storm.configured} / ${r.storm.total} (errors ${r.storm.errors}); ${pct(r.churn.cpuShare)}; ${pct(r.churn.idleShare)}`,
      target: '',
    })),
    ...spread.map((r) => ({
      measurement: `steady state (b), ${r.services} services: the streams reconnected and ${WARM_CHANGES} changes made at ${WARM_RATE}/s, then ${WARM_ROUNDS} rounds of (b): server CPU per change, the median (each round) / p99 over the rounds; changes missed; the warm-up's own CPU per change`,
      Portolan: `${ms(r.steady.cpuMsPerChange)} (${r.steady.rounds.map((x) => ms(x.cpuMsPerChange)).join(', ')}; main thread ${r.steady.rounds.map((x) => ms(x.mainMsPerChange)).join(', ')}) / ${ms(percentile(r.steady.convergence, 99))}; ${r.steady.missed}; ${ms(r.steady.warmUpMsPerChange)}`,
      target: '',
    })),
    ...spread.map((r) => ({
      measurement: `bytes allocated per change (b), ${r.services} services: estimated as the server's scavenges × its young generation's size (its /metrics; no allocation counter is exposed), over (b)'s changes / the steady rounds; scavenges and full collections in (b)`,
      Portolan: `${allocated(r.churn)} / ${r.steady.rounds.map(allocated).join(', ')}; ${r.churn.gc?.scavenges ?? '–'} scavenges, ${r.churn.gc?.full ?? '–'} full`,
      target: 'proportional to the change (not the mesh)',
    })),
    ...spread.map((r) => ({
      measurement: `server memory (b), ${r.services} services, ${SPREAD_STREAMS} streams: RSS once the storm settled / in steady state (after the steady rounds); JS heap used at the same points (its /metrics). Settled = a quiet second: the server exposes no way to force a collection`,
      Portolan: `${mib(r.memory.rss[0])} / ${mib(r.memory.rss[1])}; ${mib(r.memory.heap[0])} / ${mib(r.memory.heap[1])}`,
      target: '',
    })),
    {
      measurement: `baseline, same run: a bare edit loop in its own process (fs.watch, the 50 ms quiet period, read, js-yaml, a log line, SQLite per 600 ms: bench/load/raw-edit-loop.ts), ${SIZES[0] ?? 1000} files: CPU per change, its first ${raw.cold.changes} at ${SPREAD_RATE}/s / then at ${STORM_RATE}/s / at 5/s / steady state as above, median (each round; warm-up)`,
      Portolan: `bare loop: ${ms(raw.cold.cpuMsPerChange)} / ${ms(raw.fast.cpuMsPerChange)} / ${ms(raw.slow.cpuMsPerChange)} / ${ms(raw.steady.cpuMsPerChange)} (${raw.steady.rounds.map((x) => ms(x.cpuMsPerChange)).join(', ')}; ${ms(raw.steady.warmUpMsPerChange)})`,
      target: '',
    },
    {
      measurement: 'Portolan server log: (a); (b) per size',
      Portolan: [log, ...spread.map((r) => r.log)].join('; '),
      target: '',
    },
    {
      measurement: 'machine load average (1 min) at the start / the end (2 cores, shared)',
      Portolan: `${loadAtStart.toFixed(2)} / ${(loadavg()[0] ?? 0).toFixed(2)}`,
      target: '',
    },
  );
  const setup =
    `churn-streams: portolan serve --config-dir D (child process; D one flat directory of ServiceEntry files × 10 endpoints), ` +
    `each connection from its own loopback address (per-peer limits at their defaults), defaults otherwise (50 ms config debounce; 100 ms push window, which an edit skips while pushes are idle); proxyless gRPC SotW ` +
    `streams (LDS → RDS → CDS → EDS by name, every response ACKed), 100 per HTTP/2 connection, from ${GENERATORS} load-generator processes; ` +
    `each change rewrites one file in place; node ${process.version}, ${new Date().toISOString()}.`;
  printTable(setup, rows);
  // A quick check at another size leaves the page's figures alone.
  if (SIZES.join(',') === '1000,10000' && WARM_CHANGES === 1000)
    writeDocSection('churn-streams', `${setup}\n\n${markdownTable(rows)}`);
  else console.log('(not the full size: docs/benchmarks.md left as it was)');
}
