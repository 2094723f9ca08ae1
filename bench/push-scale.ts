// Push machinery at scale: a real `portolan serve --registries mock` child process with 1,000
// services × 10 endpoints, simulated proxies in separate load-generator processes (grpc-js), and,
// for comparison, a minimal grpc-js server that fans out pre-encoded identical responses. Measures
// the connect storm, RSS per stream, idle CPU, convergence under steady endpoint churn, CPU per push,
// and fan-out throughput against that limit. Writes its table into docs/benchmarks.md.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPortolanProcess, type PortolanProcess } from '../test/support/portolan-process.js';
import {
  connectStorm,
  Helper,
  type StormResult,
  paced,
  RAW_MAIN,
  startGenerators,
  statusOf,
} from './load/fleet.js';
import type { GeneratorMarks, ToGenerator } from './load/load-generator.js';
import { cpuSeconds, rssBytes } from './load/proc.js';
import type { StreamSpec } from './load/sim-stream.js';
import { markerAddress } from './load/wire-lite.js';
import { markdownTable, percentile, printTable, writeDocSection } from './table.js';

const SERVICES = 1000;
const ENDPOINTS = 10;
const CHANGE_RATE = 50; // endpoint changes per second
const CHURN_SECONDS = 10;
const IDLE_SECONDS = 10;
const GENERATORS = 2;
const QUIET_MS = 100;

const host = (i: number): string => `svc-${i}.bench.internal`;
const WATCHED = host(0);
const clusters = Array.from({ length: SERVICES }, (_, i) => `outbound|7070||${host(i)}`);

interface Group {
  readonly name: string;
  readonly share: number;
  readonly style: 'grpc' | 'envoy';
  readonly api: 'sotw' | 'delta';
  readonly perConnection: number;
  readonly watchesChanged: boolean;
}

// Half the streams watch the service whose endpoints churn; the mix covers both client styles, both
// protocol variants, and many streams per connection as well as one stream per connection.
const GROUPS: readonly Group[] = [
  {
    name: 'gRPC SotW, 100/conn, watching',
    share: 0.3,
    style: 'grpc',
    api: 'sotw',
    perConnection: 100,
    watchesChanged: true,
  },
  {
    name: 'gRPC SotW, 1/conn, watching',
    share: 0.1,
    style: 'grpc',
    api: 'sotw',
    perConnection: 1,
    watchesChanged: true,
  },
  {
    name: 'gRPC delta, 100/conn, watching',
    share: 0.1,
    style: 'grpc',
    api: 'delta',
    perConnection: 100,
    watchesChanged: true,
  },
  {
    name: 'gRPC SotW, 100/conn, others',
    share: 0.3,
    style: 'grpc',
    api: 'sotw',
    perConnection: 100,
    watchesChanged: false,
  },
  {
    name: 'gRPC delta, 100/conn, others',
    share: 0.19,
    style: 'grpc',
    api: 'delta',
    perConnection: 100,
    watchesChanged: false,
  },
  {
    name: 'Envoy SotW (wildcard CDS/LDS, all EDS)',
    share: 0.005,
    style: 'envoy',
    api: 'sotw',
    perConnection: 1,
    watchesChanged: false,
  },
  {
    name: 'Envoy delta (wildcard CDS/LDS, all EDS)',
    share: 0.005,
    style: 'envoy',
    api: 'delta',
    perConnection: 1,
    watchesChanged: false,
  },
];

async function put(base: string, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${base}${path}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`);
}

const endpointsOf = (i: number): { address: string; ports: { grpc: number } }[] =>
  Array.from({ length: ENDPOINTS }, (_, j) => ({
    address: `11.${Math.floor(i / 250)}.${i % 250}.${j + 1}`,
    ports: { grpc: 9000 },
  }));

async function populate(base: string): Promise<void> {
  const work = Array.from({ length: SERVICES }, (_, i) => i);
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = work.shift(); i !== undefined; i = work.shift()) {
        await put(base, `/mock/services/${host(i)}`, {
          ports: [{ name: 'grpc', number: 7070, protocol: 'GRPC' }],
        });
        await put(base, `/mock/services/${host(i)}/endpoints`, endpointsOf(i));
      }
    }),
  );
}

/** The stream specs for `n` streams, dealt to the generators so each gets a share of every group. */
function deal(n: number): { group: Group; perGenerator: StreamSpec[][] }[] {
  let serial = 0;
  return GROUPS.map((group) => {
    const count = Math.max(group.style === 'envoy' ? 1 : 0, Math.round(n * group.share));
    const perGenerator: StreamSpec[][] = Array.from({ length: GENERATORS }, () => []);
    for (let i = 0; i < count; i++) {
      const s = serial++;
      perGenerator[i % GENERATORS]?.push({
        id: `bench-${s}`,
        style: group.style,
        api: group.api,
        host: group.watchesChanged ? WATCHED : host(1 + (s % (SERVICES - 1))),
        record: group.watchesChanged,
      });
    }
    return { group, perGenerator };
  });
}

interface ChurnResult {
  readonly convergence: number[];
  readonly spreads: number[];
  readonly missed: number;
  readonly recording: number;
}

/** Makes `count` marked endpoint changes at CHANGE_RATE through `apply`, then reads the arrivals. */
async function churn(
  generators: readonly Helper[],
  count: number,
  apply: (seq: number) => Promise<void> | void,
): Promise<ChurnResult> {
  const changedAt = await paced(count, CHANGE_RATE, apply);
  await sleep(3000);
  const all = await Promise.all(
    generators.map((g) => g.ask<GeneratorMarks>({ cmd: 'marks', changes: count } satisfies ToGenerator)),
  );
  const recording = all.reduce((n, m) => n + m.recording, 0);
  const convergence: number[] = [];
  const spreads: number[] = [];
  let missed = 0;
  for (let c = 1; c <= count; c++) {
    const reached = all.reduce((n, m) => n + (m.reached[c] ?? 0), 0);
    if (reached < recording) missed += 1;
    const last = Math.max(...all.map((m) => m.last[c] ?? 0));
    const first = Math.min(...all.map((m) => m.first[c] ?? Infinity));
    convergence.push(last - (changedAt[c] ?? 0));
    if (Number.isFinite(first)) spreads.push(last - first);
  }
  return { convergence, spreads, missed, recording };
}

const fmt = (n: number, digits = 1): string => n.toFixed(digits);
const mib = (b: number): string => `${(b / 2 ** 20).toFixed(0)} MiB`;

function sorted(xs: readonly number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

export async function pushScale(
  streamCount = Number(process.env.PUSH_SCALE_STREAMS ?? 10_000),
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'portolan-push-scale-'));
  const helpers: Helper[] = [];
  let portolan: PortolanProcess | undefined;
  try {
    // PUSH_SCALE_PROFILE=DIR: the server writes a V8 CPU profile there when it stops (node --cpu-prof).
    const profileDir = process.env.PUSH_SCALE_PROFILE;
    const starting = startPortolanProcess(
      // Every simulated proxy dials from 127.0.0.1: the per-peer stream limit (#17) must not apply.
      [
        '--registries',
        'mock',
        '--data-dir',
        dataDir,
        '--push-window',
        `${QUIET_MS}ms`,
        '--max-streams-per-peer',
        String(streamCount + 100),
      ],
      { timeoutMs: 60_000, nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [] },
    );
    portolan = await starting;
    const pid = portolan.pid;
    await populate(portolan.httpBase);
    await sleep(1000);
    const rssBefore = rssBytes(pid);

    const generators = startGenerators(GENERATORS);
    helpers.push(...generators);
    const loadAtStart = loadavg()[0] ?? 0;
    const dealt = deal(streamCount);
    const generatorCpu = (): number => generators.reduce((n, g) => n + cpuSeconds(g.child.pid ?? 0), 0);
    const stormCpu = { server: cpuSeconds(pid), generators: generatorCpu() };
    const storm = await connectStorm(generators, portolan.xdsAddress, dealt, 180_000, { clusters });
    stormCpu.server = cpuSeconds(pid) - stormCpu.server;
    stormCpu.generators = generatorCpu() - stormCpu.generators;
    // Let the storm's garbage be collected before calling the server idle.
    await sleep(10_000);
    const rssAfter = rssBytes(pid);

    const idleFrom = cpuSeconds(pid);
    await sleep(IDLE_SECONDS * 1000);
    const idleCpu = (cpuSeconds(pid) - idleFrom) / IDLE_SECONDS;

    const metricsBefore = await pushCount(portolan.httpBase);
    const responsesBefore = (await statusOf(generators)).reduce((n, st) => n + st.responses, 0);
    const cpuFrom = cpuSeconds(pid);
    const generatorsFrom = generatorCpu();
    const base = portolan.httpBase;
    const changes = CHANGE_RATE * CHURN_SECONDS;
    const result = await churn(generators, changes, (seq) =>
      put(base, `/mock/services/${WATCHED}/endpoints`, [
        ...endpointsOf(0).slice(1),
        { address: markerAddress(seq), ports: { grpc: 9000 } },
      ]),
    );
    const cpuChurn = cpuSeconds(pid) - cpuFrom;
    const generatorsChurn = generatorCpu() - generatorsFrom;
    const pushes = (await pushCount(base)) - metricsBefore;
    const rssChurn = rssBytes(pid);
    const status = await statusOf(generators);
    const churnResponses = status.reduce((n, st) => n + st.responses, 0) - responsesBefore;
    const cpuPerResponse = cpuChurn / Math.max(1, churnResponses);
    await Promise.all(generators.map((g) => g.stop()));
    await portolan.stop();
    portolan = undefined;

    const limit = await rawLimit(result.recording, changes, dealt);

    const conv = sorted(result.convergence);
    const portolanRate = result.recording / (percentile(sorted(result.spreads), 50) / 1000);
    const rawRate = limit.recording / (percentile(sorted(limit.spreads), 50) / 1000);
    const perStream = (rssAfter - rssBefore) / Math.max(1, storm.configured);
    const stormRate = storm.configured / storm.seconds;
    const rawStormRate = limit.storm.configured / limit.storm.seconds;
    const rows: Record<string, string>[] = [
      {
        measurement: 'streams configured / opened',
        result: `${storm.configured} / ${storm.total} (errors: ${storm.errors}${storm.firstError ? `, first: ${storm.firstError}` : ''})`,
        target: '10,000',
      },
      {
        measurement: 'connect storm: all streams fully configured',
        result: `${fmt(storm.seconds)} s`,
        target: '≤ 30 s',
      },
      {
        measurement:
          'connect storm against the raw grpc-js server (same streams and connections, all SotW): configured in; streams/s Portolan / raw',
        result: `${fmt(limit.storm.seconds, 2)} s (${limit.storm.configured} / ${limit.storm.total}); ${fmt(stormRate, 0)} / ${fmt(rawStormRate, 0)} = ${fmt(stormRate / rawStormRate, 2)}`,
        target: '≥ 0.7',
      },
      {
        measurement: 'server RSS: before streams / with all streams / after churn',
        result: `${mib(rssBefore)} / ${mib(rssAfter)} / ${mib(rssChurn)}`,
        target: '≤ 1 GB',
      },
      { measurement: 'server RSS per connected stream', result: `${fmt(perStream / 1024)} KiB`, target: '' },
      {
        measurement: `idle server CPU (${IDLE_SECONDS} s, all streams open)`,
        result: `${fmt(idleCpu * 100, 2)} % of a core`,
        target: '≤ 2 %',
      },
      {
        measurement: `convergence, change → last of ${result.recording} watching streams: p50 / p99 / max`,
        result: `${fmt(percentile(conv, 50), 0)} / ${fmt(percentile(conv, 99), 0)} / ${fmt(conv.at(-1) ?? NaN, 0)} ms`,
        target: `p99 ≤ ${QUIET_MS + 250} ms`,
      },
      {
        measurement: 'changes not reaching every watching stream',
        result: String(result.missed),
        target: '0',
      },
      {
        measurement: `pushes for ${changes} changes; server CPU per push`,
        result: `${pushes}; ${fmt((cpuChurn / Math.max(1, pushes)) * 1000, 0)} ms`,
        target: '',
      },
      {
        measurement: 'fan-out: responses/s to watching streams, Portolan / raw grpc-js limit',
        result: `${fmt(portolanRate, 0)} / ${fmt(rawRate, 0)} = ${fmt(portolanRate / rawRate, 2)}`,
        target: '≥ 0.7',
      },
      {
        measurement: 'server CPU per response during the churn, µs: Portolan / raw limit (limit ÷ Portolan)',
        result: `${fmt(cpuPerResponse * 1e6, 0)} / ${fmt(limit.cpuPerResponse * 1e6, 0)} (${fmt(limit.cpuPerResponse / cpuPerResponse, 2)})`,
        target: '≥ 0.7',
      },
      {
        measurement: 'CPU seconds during the storm / the churn: server; load generators',
        result: `${fmt(stormCpu.server)} / ${fmt(cpuChurn)}; ${fmt(stormCpu.generators)} / ${fmt(generatorsChurn)}`,
        target: '',
      },
      {
        measurement: 'machine load average (1 min) at the storm / after the limit run (2 cores, shared)',
        result: `${fmt(loadAtStart, 2)} / ${fmt(loadavg()[0] ?? 0, 2)}`,
        target: '',
      },
      {
        measurement: 'responses / bytes received by the load generators',
        result: `${status.reduce((n, s) => n + s.responses, 0)} / ${mib(status.reduce((n, s) => n + s.bytes, 0))}`,
        target: '',
      },
    ];
    const setup =
      `push-scale: portolan serve --registries mock (child process), ${SERVICES} services × ${ENDPOINTS} endpoints, ` +
      `push window ${QUIET_MS} ms, defaults otherwise; ${storm.total} streams from ${GENERATORS} load-generator processes ` +
      `(${dealt.map((d) => `${d.perGenerator.reduce((n, l) => n + l.length, 0)} ${d.group.name}`).join('; ')}); ` +
      `${changes} endpoint changes of ${WATCHED} at ${CHANGE_RATE}/s; node ${process.version}, ${new Date().toISOString()}.`;
    printTable(setup, rows);
    // A profiled run is not a measurement (the profiler costs CPU): keep the page as it is.
    if (!profileDir) writeDocSection('push-scale', `${setup}\n\n${markdownTable(rows)}`);
  } finally {
    await portolan?.stop();
    for (const h of helpers) await h.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function pushCount(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^portolan_xds_pushes_total\{[^}]*\} (\d+)/gm)) total += Number(m[1]);
  return total;
}

/**
 * The raw server under the same load: first the connect storm (the same streams on the same
 * connections as Portolan's, all SotW: it has no delta), from load generators of their own that
 * then close; then the same fan-out (the watching streams, gRPC SotW, 100 per connection).
 */
async function rawLimit(
  watchers: number,
  changes: number,
  dealt: ReturnType<typeof deal>,
): Promise<ChurnResult & { cpuPerResponse: number; storm: StormResult }> {
  const server = Helper.start(RAW_MAIN, [`outbound|7070||${WATCHED}`]);
  const generators = startGenerators(GENERATORS);
  try {
    const { port } = await server.next<{ port: number }>();
    const stormGenerators = startGenerators(GENERATORS);
    let storm: StormResult;
    try {
      const sotw = dealt.map(({ group, perGenerator }) => ({
        group,
        perGenerator: perGenerator.map((list) => list.map((spec) => ({ ...spec, api: 'sotw' as const }))),
      }));
      storm = await connectStorm(stormGenerators, `127.0.0.1:${port}`, sotw, 120_000, { clusters });
    } finally {
      for (const g of stormGenerators) await g.stop();
    }
    const specs: StreamSpec[][] = Array.from({ length: GENERATORS }, () => []);
    for (let i = 0; i < watchers; i++)
      specs[i % GENERATORS]?.push({
        id: `raw-${i}`,
        style: 'grpc',
        api: 'sotw',
        host: WATCHED,
        record: true,
      });
    const watching = [{ group: GROUPS[0] as Group, perGenerator: specs }];
    await connectStorm(generators, `127.0.0.1:${port}`, watching, 120_000, { clusters });
    // The raw server pushes at Portolan's batching cadence: every change window's latest state.
    const every = Math.round((2 * QUIET_MS * CHANGE_RATE) / 1000);
    const pid = server.child.pid ?? 0;
    const cpuFrom = cpuSeconds(pid);
    const responsesFrom = (await statusOf(generators)).reduce((n, st) => n + st.responses, 0);
    const result = await churn(generators, changes, (seq) => {
      if (seq % every !== 0 && seq !== changes) return;
      server.child.send({
        cmd: 'push',
        addresses: [
          ...endpointsOf(0)
            .slice(1)
            .map((e) => e.address),
          markerAddress(seq),
        ],
      });
    });
    const responses = (await statusOf(generators)).reduce((n, st) => n + st.responses, 0) - responsesFrom;
    return { ...result, cpuPerResponse: (cpuSeconds(pid) - cpuFrom) / Math.max(1, responses), storm };
  } finally {
    for (const g of generators) await g.stop();
    await server.stop();
  }
}
