// Issue #18's proxyless rows: `portolan serve --config-dir D` (a child process; D one flat directory
// of 1,000 ServiceEntry files × 10 endpoints) and 2,000 proxyless gRPC streams over 20 HTTP/2
// connections (100 each, from two load-generator processes), each walking LDS → RDS → CDS → EDS by
// name for one service (stream k watches service k mod 1,000) and ACKing every response (SotW).
// Rounds: open every stream, wait until all hold their config, close them all; the first three rounds
// warm up, the next six are measured. The same rounds run against Portolan with strict admission pacing,
// with the pacing lifted, and a minimal grpc-js server (bench/load/raw-ads-server.ts) that answers
// each subscription with the very bytes Portolan sent for that type and name in its first round; the
// later rounds of the four servers interleave, so load from other work on the machine falls on
// all alike. Reports the storm time (median of the warm rounds) and the throughput ratio, server RSS
// per stream (after the first storm settles, minus before it), and server CPU per response: the
// median of the warm rounds' figures (each round's CPU ÷ its responses), with their mean beside it.
// Beside them, Portolan's full collections and scavenge pauses per round (its /metrics), which decide
// most of the spread between one round's figure and the next. Writes its table into
// docs/benchmarks.md. PORTOLAN_BENCH_PROFILE=<dir>: each Portolan child writes a V8 CPU profile
// there (`node --cpu-prof`), and so does the raw server. A quick check: PROXYLESS_STORM_VARIANTS=0
// (Portolan at its defaults and the raw server only) and PROXYLESS_STORM_ROUNDS=W,M (W warm-ups, M
// measured rounds); docs/benchmarks.md is written by the full run only.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  connectStorm,
  Helper,
  RAW_MAIN,
  resetStreams,
  receivedBy,
  startGenerators,
  type StormResult,
  type StreamBatch,
} from './load/fleet.js';
import type { GeneratorCaptured, ToGenerator } from './load/load-generator.js';
import { cpuSeconds, rssBytes, waitQuiet } from './load/proc.js';
import { host, logProblems, startConfigDirPortolan } from './load/service-files.js';
import type { StreamSpec } from './load/sim-stream.js';
import { markdownTable, percentile, printTable, writeDocSection } from './table.js';

export const STORM_SERVICES = 1000;
export const STORM_STREAMS = 2000;
const PER_CONNECTION = 100;
export const GENERATORS = 2;
// The first rounds warm up: the server's CPU per response keeps falling for three rounds (V8's
// optimising compiler, the young generation's size) — 340, 195, 122, then 104, 106, 103, 88, 91 µs in
// one run — so a measured round that follows a single warm-up is not warm yet.
// PROXYLESS_STORM_ROUNDS=W,M: W warm-ups and M measured rounds instead (a quick A/B check).
const ROUND_KNOB = process.env.PROXYLESS_STORM_ROUNDS?.split(',').map(Number);
const WARM_UP_ROUNDS = ROUND_KNOB?.[0] ?? 3;
// Six measured rounds: on this shared 2-vCPU machine one server's CPU per response varies from
// round to round by up to 2× (the raw server's too), so four left the figures to a round or two.
const MEASURED_ROUNDS = ROUND_KNOB?.[1] ?? 6;
// PROXYLESS_STORM_VARIANTS=0: only Portolan at its defaults and the raw server (no strict or unpaced).
const VARIANTS = process.env.PROXYLESS_STORM_VARIANTS !== '0';
/** The full run only writes docs/benchmarks.md. */
const FULL = ROUND_KNOB === undefined && VARIANTS;
const ROUNDS = WARM_UP_ROUNDS + MEASURED_ROUNDS;
const STORM_TIMEOUT_MS = 120_000;
const UNPACED = 100_000;

/**
 * `streams` proxyless SotW streams, stream k watching service k mod `services`; each generator gets a
 * contiguous share, `PER_CONNECTION` to a connection. `record(k)`: whether stream k keeps the
 * endpoint-change markers it receives.
 */
export function proxylessStreams(
  streams: number,
  services: number,
  record: (k: number) => boolean = () => false,
): StreamBatch[] {
  const share = Math.ceil(streams / GENERATORS);
  const perGenerator: StreamSpec[][] = Array.from({ length: GENERATORS }, (_, g) =>
    Array.from({ length: Math.max(0, Math.min(share, streams - g * share)) }, (_, j) => {
      const k = g * share + j;
      return {
        id: `proxyless-${k}`,
        style: 'grpc',
        api: 'sotw',
        host: host(k % services),
        record: record(k),
      };
    }),
  );
  return [{ group: { perConnection: PER_CONNECTION }, perGenerator }];
}

interface Round extends StormResult {
  /** Server CPU seconds from the first open to the last stream configured. */
  readonly cpu: number;
  readonly responses: number;
  readonly bytes: number;
  /** Portolan's garbage collection over the round (from its /metrics); none for the raw server. */
  readonly gc?: GcTotals;
}

/** Garbage-collection pauses as the server's own metrics count them. */
interface GcTotals {
  readonly fullCount: number;
  readonly fullMs: number;
  readonly scavengeMs: number;
}

/**
 * The server's GC totals so far, from `portolan_nodejs_gc_duration_seconds` (prom-client's default
 * metrics): a full collection ("major") in a round costs its pause and the marking threads' CPU, and
 * is what most moves one round's CPU per response from the next.
 */
async function gcTotals(metricsUrl: string): Promise<GcTotals> {
  const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(10_000) })).text();
  const read = (suffix: string, kind: string): number => {
    const prefix = `portolan_nodejs_gc_duration_seconds_${suffix}{kind="${kind}"} `;
    const line = text.split('\n').find((l) => l.startsWith(prefix));
    return line ? Number(line.slice(prefix.length)) : 0;
  };
  return {
    fullCount: read('count', 'major'),
    fullMs: read('sum', 'major') * 1000,
    scavengeMs: read('sum', 'minor') * 1000,
  };
}

/** A server under test and the rounds it has been through. */
interface Target {
  readonly pid: number;
  readonly address: string;
  /** Portolan's /metrics, read around each round for its GC figures. */
  readonly metrics?: string;
  readonly rounds: Round[];
  /** RSS before the first round and once the first round's storm has settled. */
  rssBefore: number;
  rssAfter: number;
  /** RSS with every stream connected once more after all the rounds, settled: the steady state. */
  rssSteady: number;
}

/** One connect storm against `target`, then its streams closed and the server quiet again. */
async function stormRound(target: Target, generators: readonly Helper[], capture = false): Promise<void> {
  const batches = proxylessStreams(STORM_STREAMS, STORM_SERVICES);
  // Read outside the CPU window: rendering the metrics is not the storm's work.
  const gcFrom = target.metrics ? await gcTotals(target.metrics) : undefined;
  const cpuFrom = cpuSeconds(target.pid);
  const from = await receivedBy(generators);
  const storm = await connectStorm(generators, target.address, batches, STORM_TIMEOUT_MS, { capture });
  const cpu = cpuSeconds(target.pid) - cpuFrom;
  const to = await receivedBy(generators);
  const gcTo = target.metrics ? await gcTotals(target.metrics) : undefined;
  target.rounds.push({
    ...storm,
    cpu,
    responses: to.responses - from.responses,
    bytes: to.bytes - from.bytes,
    gc:
      gcFrom && gcTo
        ? {
            fullCount: gcTo.fullCount - gcFrom.fullCount,
            fullMs: gcTo.fullMs - gcFrom.fullMs,
            scavengeMs: gcTo.scavengeMs - gcFrom.scavengeMs,
          }
        : undefined,
  });
}

async function closeRound(target: Target, generators: readonly Helper[]): Promise<void> {
  await resetStreams(generators);
  // The server's side of the closes is not part of the next storm.
  await sleep(500);
  await waitQuiet(target.pid, 10);
}

/**
 * The warm-up round: RSS before it and once it has settled (the figure per stream). `onSettled`:
 * the load generators keep the round's first responses for it (Portolan's, for the raw server).
 */
async function warmUp(
  target: Target,
  generators: readonly Helper[],
  onSettled?: () => Promise<void>,
): Promise<void> {
  await waitQuiet(target.pid, 30);
  target.rssBefore = rssBytes(target.pid);
  await stormRound(target, generators, onSettled !== undefined);
  await waitQuiet(target.pid, 20);
  target.rssAfter = rssBytes(target.pid);
  await onSettled?.();
  await closeRound(target, generators);
}

/**
 * Rounds from..to-1, interleaved: round r of every target before round r + 1 of any, the order
 * rotating each round, so load from other work on the machine falls on all of them alike.
 */
async function interleavedRounds(
  targets: readonly Target[],
  generators: readonly Helper[],
  from: number,
  to: number,
): Promise<void> {
  for (let r = from; r < to; r++) {
    for (let i = 0; i < targets.length; i++) {
      const target = targets[(i + r) % targets.length];
      if (!target) continue;
      await waitQuiet(target.pid, 10);
      await stormRound(target, generators);
      await closeRound(target, generators);
    }
  }
}

/** The first response of each (type, name) the generators saw, merged, as raw-ads-server reads them. */
async function captured(generators: readonly Helper[]): Promise<Record<string, string>> {
  const all = await Promise.all(
    generators.map((g) => g.ask<GeneratorCaptured>({ cmd: 'captured' } satisfies ToGenerator)),
  );
  return Object.assign({}, ...all.map((c) => c.responses)) as Record<string, string>;
}

interface Summary {
  readonly median: number;
  readonly warmUp: number;
  readonly all: string;
  readonly perStreamKiB: number;
  /** The median over the warm rounds of each round's server CPU ÷ its responses. */
  readonly cpuPerResponseUs: number;
  /** All warm rounds' CPU ÷ all their responses (what a round of contention moves most). */
  readonly cpuMeanUs: number;
  /** Each warm round's CPU per response, µs. */
  readonly cpuRounds: string;
  /** Each warm round's full collections (their pauses) and scavenge pauses; '' without metrics. */
  readonly gcRounds: string;
  /** The median CPU per response of the warm rounds without a full collection, and how many there were. */
  readonly withoutFull: { readonly us: number; readonly rounds: number };
  readonly responsesPerStream: number;
  readonly bytesPerRound: number;
  readonly configured: string;
}

/** The median; of an even count, the mean of the middle two. */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return (percentile(sorted, 50) + (sorted[Math.floor(sorted.length / 2)] ?? NaN)) / 2;
}

function summarize(run: Target): Summary {
  const warm = run.rounds.slice(WARM_UP_ROUNDS);
  const seconds = warm.map((r) => r.seconds);
  const first = run.rounds[0];
  const responses = warm.reduce((n, r) => n + r.responses, 0);
  const perRound = warm.map((r) => (r.cpu / Math.max(1, r.responses)) * 1e6);
  const errors = run.rounds.reduce((n, r) => n + r.errors, 0);
  const firstError = run.rounds.find((r) => r.firstError)?.firstError;
  return {
    median: median(seconds),
    warmUp: first?.seconds ?? NaN,
    all: run.rounds.map((r) => r.seconds.toFixed(2)).join(', '),
    perStreamKiB: (run.rssAfter - run.rssBefore) / STORM_STREAMS / 1024,
    cpuPerResponseUs: median(perRound),
    cpuMeanUs: (warm.reduce((n, r) => n + r.cpu, 0) / Math.max(1, responses)) * 1e6,
    cpuRounds: perRound.map((us) => us.toFixed(0)).join(', '),
    gcRounds: warm
      .map((r) =>
        r.gc ? `${r.gc.fullCount} (${r.gc.fullMs.toFixed(0)} ms) / ${r.gc.scavengeMs.toFixed(0)} ms` : '',
      )
      .filter(Boolean)
      .join(', '),
    withoutFull: ((quiet) => ({ us: median(quiet), rounds: quiet.length }))(
      perRound.filter((_, i) => warm[i]?.gc?.fullCount === 0),
    ),
    responsesPerStream: responses / Math.max(1, warm.length * STORM_STREAMS),
    bytesPerRound: warm.reduce((n, r) => n + r.bytes, 0) / Math.max(1, warm.length),
    configured:
      run.rounds.map((r) => `${r.configured}/${r.total}`).join(', ') +
      ` (stream errors: ${errors}${firstError ? `, first: ${firstError}` : ''})`,
  };
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(0)} MiB`;

export async function proxylessStorm(): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'portolan-storm-'));
  const responsesFile = join(tmp, 'responses.json');
  const helpers: Helper[] = [];
  const servers: Awaited<ReturnType<typeof startConfigDirPortolan>>[] = [];
  try {
    const loadAtStart = loadavg()[0] ?? 0;
    const generators = startGenerators(GENERATORS);
    helpers.push(...generators);
    const target = (pid: number, address: string, metrics?: string): Target => ({
      pid,
      address,
      metrics,
      rounds: [],
      rssBefore: 0,
      rssAfter: 0,
      rssSteady: 0,
    });
    const start = async (args: readonly string[] = []): Promise<Target> => {
      const server = await startConfigDirPortolan(STORM_SERVICES, undefined, args);
      servers.push(server);
      return target(server.portolan.pid, server.portolan.xdsAddress, `${server.portolan.httpBase}/metrics`);
    };
    // Portolan at its defaults; strict pacing (the guaranteed rate only, as before adaptive
    // admission), which alone keeps 2,000 new streams near 1 s; the pacing lifted altogether.
    const ours = await start();
    const strict = VARIANTS ? await start(['--push-admission-max-delay', '0']) : undefined;
    const unpaced = VARIANTS ? await start(['--push-new-streams-per-second', String(UNPACED)]) : undefined;
    let recorded = 0;
    await warmUp(ours, generators, async () => {
      const responses = await captured(generators);
      recorded = Object.keys(responses).length;
      writeFileSync(responsesFile, JSON.stringify(responses));
    });
    const rawHelper = Helper.start(RAW_MAIN, [`outbound|7070||${host(0)}`, responsesFile]);
    helpers.push(rawHelper);
    const { port } = await rawHelper.next<{ port: number }>();
    const theirs = target(rawHelper.pid, `127.0.0.1:${port}`);
    const all = [ours, ...(strict && unpaced ? [strict, unpaced] : []), theirs];
    for (const t of all.slice(1)) await warmUp(t, generators);
    // The rest of the warm-up, then the measured rounds, all interleaved.
    await interleavedRounds(all, generators, 1, ROUNDS);
    // Steady state: after every round, the streams connected once more (not timed) and settled.
    for (const t of [ours, theirs]) {
      await connectStorm(
        generators,
        t.address,
        proxylessStreams(STORM_STREAMS, STORM_SERVICES),
        STORM_TIMEOUT_MS,
      );
      await waitQuiet(t.pid, 20);
      t.rssSteady = rssBytes(t.pid);
      await closeRound(t, generators);
    }
    const [oursLog, strictLog = '–', unpacedLog = '–'] = servers.map((s) => logProblems(s.portolan.logs));
    const log = `${oursLog}; strict: ${strictLog}; unpaced: ${unpacedLog}`;
    const ourRss = { before: ours.rssBefore, after: ours.rssAfter, steady: ours.rssSteady };
    report(
      summarize(ours),
      summarize(theirs),
      strict && unpaced ? { strict: summarize(strict), unpaced: summarize(unpaced) } : undefined,
      ourRss,
      theirs,
      recorded,
      log,
      loadAtStart,
    );
  } finally {
    for (const server of servers) await server.stop();
    for (const h of helpers) await h.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

function report(
  ours: Summary,
  raw: Summary,
  /** The strict-pacing and unpaced variants; undefined when PROXYLESS_STORM_VARIANTS=0 left them out. */
  variants: { readonly strict: Summary; readonly unpaced: Summary } | undefined,
  ourRss: { before: number; after: number; steady: number },
  rawRun: Target,
  recorded: number,
  log: string,
  loadAtStart: number,
): void {
  const f = (n: number, digits = 2): string => n.toFixed(digits);
  const ratio = raw.median / ours.median;
  const cpuRatio = ours.cpuPerResponseUs / raw.cpuPerResponseUs;
  const { strict, unpaced } = variants ?? {};
  const beside = (of: (s: Summary) => string): string =>
    strict && unpaced ? ` (strict: ${of(strict)}; unpaced: ${of(unpaced)})` : '';
  const rows: (Record<string, string> | undefined)[] = [
    {
      measurement: `connect storm, all ${STORM_STREAMS} streams configured (median of ${MEASURED_ROUNDS} warm rounds)`,
      Portolan: `${f(ours.median)} s`,
      'raw grpc-js': `${f(raw.median)} s`,
      target: `≥ 0.7 × the raw throughput: ${f(ratio)} ×`,
    },
    {
      measurement: 'server memory per stream (RSS after the first storm settles − before, ÷ streams)',
      Portolan: `+${f(ours.perStreamKiB, 1)} KiB`,
      'raw grpc-js': `+${f(raw.perStreamKiB, 1)} KiB`,
      target: '≤ 40 KB',
    },
    {
      measurement: `server CPU per response, median of the ${MEASURED_ROUNDS} warm rounds (mean over them); Portolan ÷ raw`,
      Portolan: `${f(ours.cpuPerResponseUs, 0)} µs (${f(ours.cpuMeanUs, 0)} µs)`,
      'raw grpc-js': `${f(raw.cpuPerResponseUs, 0)} µs (${f(raw.cpuMeanUs, 0)} µs)`,
      target: `≤ 1.4 ×: ${f(cpuRatio)} × (means: ${f(ours.cpuMeanUs / raw.cpuMeanUs)} ×)`,
    },
    {
      measurement: 'server CPU per response of each warm round (µs)',
      Portolan: `${ours.cpuRounds}${beside((v) => v.cpuRounds)}`,
      'raw grpc-js': raw.cpuRounds,
      target: '',
    },
    {
      measurement:
        "Portolan's garbage collection in each warm round (its /metrics): full collections (their pauses) / scavenge pauses; the median CPU per response of the rounds without a full collection (how many)",
      Portolan: `${ours.gcRounds}; ${ours.withoutFull.rounds > 0 ? `${f(ours.withoutFull.us, 0)} µs (${f(ours.withoutFull.us / raw.cpuPerResponseUs)} × the raw median)` : '–'} (${ours.withoutFull.rounds} of ${MEASURED_ROUNDS})`,
      'raw grpc-js': '',
      target: '',
    },
    strict && {
      measurement:
        'the same storm, Portolan with --push-admission-max-delay 0 (strict pacing at --push-new-streams-per-second 1000, the behaviour before adaptive admission): median; CPU per response',
      Portolan: `${f(strict.median)} s (${f(raw.median / strict.median)} × the raw throughput); ${f(strict.cpuPerResponseUs, 0)} µs (${f(strict.cpuPerResponseUs / raw.cpuPerResponseUs)} ×)`,
      'raw grpc-js': '',
      target: '',
    },
    unpaced && {
      measurement: `the same storm, Portolan with --push-new-streams-per-second ${UNPACED} (admission pacing lifted; default 1000): median; CPU per response`,
      Portolan: `${f(unpaced.median)} s (${f(raw.median / unpaced.median)} × the raw throughput); ${f(unpaced.cpuPerResponseUs, 0)} µs (${f(unpaced.cpuPerResponseUs / raw.cpuPerResponseUs)} ×)`,
      'raw grpc-js': '',
      target: '',
    },
    {
      measurement: `storm time of every round, the ${WARM_UP_ROUNDS} warm-ups first (s)`,
      Portolan: `${ours.all}${beside((v) => v.all)}`,
      'raw grpc-js': raw.all,
      target: '',
    },
    {
      measurement: 'streams configured per round',
      Portolan: `${ours.configured}${beside((v) => v.configured)}`,
      'raw grpc-js': raw.configured,
      target: `${STORM_STREAMS}`,
    },
    {
      measurement: 'responses per stream per warm round',
      Portolan: f(ours.responsesPerStream),
      'raw grpc-js': f(raw.responsesPerStream),
      target: '4',
    },
    {
      measurement: 'response bytes received per warm round (the same responses: within the nonces)',
      Portolan: `${(ours.bytesPerRound / 2 ** 20).toFixed(2)} MiB`,
      'raw grpc-js': `${(raw.bytesPerRound / 2 ** 20).toFixed(2)} MiB`,
      target: '',
    },
    {
      measurement:
        'server RSS before the first storm / after it settled (a quiet second; no forced collection) / steady state: after every round, the streams connected once more and settled; its per stream (− before, ÷ streams)',
      Portolan: `${mib(ourRss.before)} / ${mib(ourRss.after)} / ${mib(ourRss.steady)}; +${f((ourRss.steady - ourRss.before) / STORM_STREAMS / 1024, 1)} KiB`,
      'raw grpc-js': `${mib(rawRun.rssBefore)} / ${mib(rawRun.rssAfter)} / ${mib(rawRun.rssSteady)}; +${f((rawRun.rssSteady - rawRun.rssBefore) / STORM_STREAMS / 1024, 1)} KiB`,
      target: '≤ 40 KB',
    },
    {
      measurement: '(type, name) responses recorded from Portolan and replayed by the raw server',
      Portolan: String(recorded),
      'raw grpc-js': '',
      target: `${4 * STORM_SERVICES}`,
    },
    { measurement: 'Portolan server log', Portolan: log, 'raw grpc-js': '', target: '' },
    {
      measurement: 'machine load average (1 min) at the start / the end (2 cores, shared)',
      Portolan: `${f(loadAtStart)} / ${f(loadavg()[0] ?? 0)}`,
      'raw grpc-js': '',
      target: '',
    },
  ];
  const setup =
    `proxyless-storm: portolan serve --config-dir D (child process; D: ${STORM_SERVICES} ServiceEntry files × 10 endpoints, one directory), ` +
    `each connection from its own loopback address, defaults otherwise; ${STORM_STREAMS} proxyless gRPC SotW streams ` +
    `(LDS → RDS → CDS → EDS by name, every response ACKed) over ${STORM_STREAMS / PER_CONNECTION} HTTP/2 connections ` +
    `from ${GENERATORS} load-generator processes; ${ROUNDS} rounds, the first ${WARM_UP_ROUNDS} warm-ups; the raw grpc-js server in the same run ` +
    `replays Portolan's first-round responses; node ${process.version}, ${new Date().toISOString()}.`;
  const shown = rows.filter((r): r is Record<string, string> => r !== undefined);
  printTable(setup, shown);
  if (FULL) writeDocSection('proxyless-storm', `${setup}\n\n${markdownTable(shown)}`);
}
