// Cost of one change as the mesh grows: `portolan serve --config-dir` as a child process with N
// ServiceEntry files (one service × 10 endpoints each), one stream watching the churned service's
// endpoints, and one file rewritten CHANGES times at RATE per second. Reports server CPU per change
// (from /proc, idle CPU subtracted) and change → EDS response p99, at 1,000 and 10,000 services,
// and their ratio: a path that is O(mesh) per change shows up as a ratio far above 1.
// PORTOLAN_BENCH_PROFILE=<dir> writes a V8 CPU profile of each child (`node --cpu-prof`).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENDPOINT } from '../xds/proto/type-urls.js';
import { startPortolanProcess } from '../test/support/portolan-process.js';
import { decodedResources, RawAdsClient } from '../test/support/raw-ads-client.js';
import { percentile, printTable } from './table.js';

const SIZES = [1000, 10_000];
const ENDPOINTS = 10;
const CHANGES = 40;
const RATE = 5; // changes per second
const IDLE_SECONDS = 3;
const CLK_TCK = 100;

const host = (i: number): string => `svc-${i}.churn.internal`;

function serviceFile(i: number, generation: number): string {
  const endpoints = Array.from(
    { length: ENDPOINTS },
    (_, e) => `    - { address: 10.${(generation >> 8) & 255}.${generation & 255}.${e + 1} }`,
  ).join('\n');
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: svc-${i} }
spec:
  hosts: [${host(i)}]
  ports: [{ number: 7070, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints:
${endpoints}
`;
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

export interface ChurnResult {
  readonly services: number;
  readonly cpuMsPerChange: number;
  readonly p50: number;
  readonly p99: number;
}

async function churnAt(services: number): Promise<ChurnResult> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-churn-'));
  const configDir = join(dir, 'config');
  mkdirSync(configDir);
  for (let i = 0; i < services; i++) writeFileSync(join(configDir, `svc-${i}.yaml`), serviceFile(i, 0));
  const profileDir = process.env.PORTOLAN_BENCH_PROFILE;
  const portolan = await startPortolanProcess(['--config-dir', configDir, '--data-dir', join(dir, 'data')], {
    timeoutMs: 300_000,
    nodeArgs: profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
  });
  const client = new RawAdsClient(portolan.xdsAddress);
  const cluster = `outbound|7070||${host(0)}`;
  const latencies: number[] = [];
  try {
    client.send({
      node: { id: 'sidecar~10.0.0.1~churn.default~default.svc.cluster.local', cluster: 'churn' },
      type_url: ENDPOINT,
      resource_names: [cluster],
    });
    client.ack(await client.next(60_000), [cluster]);
    // The initial load's tail (history, snapshot save, GC) must not count against the changes:
    // wait (bounded) for a quiet second, then take the idle rate from the next few.
    for (let i = 0; i < 60; i++) {
      const before = cpuSeconds(portolan.pid);
      await sleep(1000);
      if (cpuSeconds(portolan.pid) - before <= 0.05) break;
    }
    const idleStart = cpuSeconds(portolan.pid);
    await sleep(IDLE_SECONDS * 1000);
    const idlePerSecond = (cpuSeconds(portolan.pid) - idleStart) / IDLE_SECONDS;
    const cpuStart = cpuSeconds(portolan.pid);
    const started = performance.now();
    for (let g = 1; g <= CHANGES; g++) {
      const at = performance.now();
      writeFileSync(join(configDir, 'svc-0.yaml'), serviceFile(0, g));
      const marker = `"10.${(g >> 8) & 255}.${g & 255}.1"`;
      for (;;) {
        const res = await client.next(30_000);
        client.ack(res, [cluster]);
        if (JSON.stringify(decodedResources(res)).includes(marker)) break;
      }
      latencies.push(performance.now() - at);
      await sleep(Math.max(0, at + 1000 / RATE - performance.now()));
    }
    const seconds = (performance.now() - started) / 1000;
    const busy = Math.max(0, cpuSeconds(portolan.pid) - cpuStart - idlePerSecond * seconds);
    const sorted = [...latencies].sort((a, b) => a - b);
    return {
      services,
      cpuMsPerChange: (busy * 1000) / CHANGES,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
    };
  } finally {
    client.close();
    await portolan.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function churnBench(sizes: readonly number[] = SIZES): Promise<ChurnResult[]> {
  const results: ChurnResult[] = [];
  for (const n of sizes) results.push(await churnAt(n));
  const base = results[0];
  printTable(
    `Config-directory churn: one file rewritten ${CHANGES}× at ${RATE}/s, one stream watching its endpoints`,
    results.map((r) => ({
      services: String(r.services),
      'server CPU per change (ms)': r.cpuMsPerChange.toFixed(1),
      'change → EDS p50 (ms)': r.p50.toFixed(0),
      'change → EDS p99 (ms)': r.p99.toFixed(0),
      'CPU ratio': base ? (r.cpuMsPerChange / base.cpuMsPerChange).toFixed(2) : '',
      'p99 ratio': base ? (r.p99 / base.p99).toFixed(2) : '',
    })),
  );
  return results;
}
