// Cost of one change as the mesh grows: `portolan serve` as a child process with N services × 10
// endpoints, from a config directory (one ServiceEntry file each; or a selecting ServiceEntry and
// its VM's WorkloadEntry file each) or the mock registry (its HTTP
// API), one stream watching the churned service's endpoints, and that service changed CHANGES times
// at RATE per second (its file rewritten, or its endpoints PUT). Reports server CPU per change
// (from /proc, idle CPU subtracted) and change → EDS response p99, at 1,000 and 10,000 services,
// and their ratio: a path that is O(mesh) per change shows up as a ratio far above 1.
// PORTOLAN_BENCH_PROFILE=<dir> writes a V8 CPU profile of each child (`node --cpu-prof`).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENDPOINT } from '../xds/proto/type-urls.js';
import { startPortolanProcess } from '../test/support/portolan-process.js';
import { decodedResources, RawAdsClient } from '../test/support/raw-ads-client.js';
import { cpuSeconds, idleRate, waitQuiet } from './load/proc.js';
import { generationAddresses, host, serviceEntryHead, serviceFile } from './load/service-files.js';
import { percentile, printTable } from './table.js';

const SIZES = [1000, 10_000];
const CHANGES = 40;
// Changes made first and not counted: the steady cost of a change, not V8 compiling its path once.
const WARMUP = 20;
const RATE = 5; // changes per second
const IDLE_SECONDS = 3;

// `config-dir-sharded`: the same files in subdirectories of FILES_PER_DIR. chokidar re-reads (and
// lstat()s every entry of) the directory of a changed file on every event in it, so a file's cost
// grows with its directory's size, not the tree's: the layout docs/benchmarks.md recommends.
// `config-dir-vms`: sharded as above, each service a ServiceEntry selecting its one VM by label and
// that VM's WorkloadEntry in a file of its own (vm-N.yaml beside svc-N.yaml); the churn rewrites the
// VM's file with a new address (one endpoint per service instead of ENDPOINTS).
type Source = 'config-dir' | 'config-dir-sharded' | 'config-dir-vms' | 'mock';
const FILES_PER_DIR = 100;

function servicePath(configDir: string, source: Source, i: number): string {
  return source === 'config-dir-sharded' || source === 'config-dir-vms'
    ? join(configDir, `shard-${Math.floor(i / FILES_PER_DIR)}`, `svc-${i}.yaml`)
    : join(configDir, `svc-${i}.yaml`);
}

const vmPath = (configDir: string, i: number): string =>
  join(dirname(servicePath(configDir, 'config-dir-vms', i)), `vm-${i}.yaml`);

const selectingServiceFile = (i: number): string =>
  `${serviceEntryHead(i)}  workloadSelector: { labels: { app: svc-${i} } }\n`;

function vmFile(i: number, generation: number): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: vm-${i} }
spec:
  address: 10.${(generation >> 8) & 255}.${generation & 255}.1
  labels: { app: svc-${i} }
`;
}

const endpointsOf = (generation: number): { address: string; ports: { grpc: number } }[] =>
  generationAddresses(generation).map((address) => ({ address, ports: { grpc: 7070 } }));

async function put(base: string, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${base}${path}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`PUT ${path}: ${res.status} ${await res.text()}`);
}

async function populateMock(base: string, services: number): Promise<void> {
  const work = Array.from({ length: services }, (_, i) => i);
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = work.shift(); i !== undefined; i = work.shift()) {
        await put(base, `/mock/services/${host(i)}`, {
          ports: [{ name: 'grpc', number: 7070, protocol: 'GRPC' }],
        });
        await put(base, `/mock/services/${host(i)}/endpoints`, endpointsOf(0));
      }
    }),
  );
}

export interface ChurnResult {
  readonly source: Source;
  readonly services: number;
  readonly cpuMsPerChange: number;
  readonly p50: number;
  readonly p99: number;
}

async function churnAt(source: Source, services: number): Promise<ChurnResult> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-churn-'));
  const configDir = join(dir, 'config');
  mkdirSync(configDir);
  if (source !== 'mock')
    for (let i = 0; i < services; i++) {
      const path = servicePath(configDir, source, i);
      if (i % FILES_PER_DIR === 0) mkdirSync(dirname(path), { recursive: true });
      if (source !== 'config-dir-vms') writeFileSync(path, serviceFile(i, 0));
      else {
        writeFileSync(path, selectingServiceFile(i));
        writeFileSync(vmPath(configDir, i), vmFile(i, 0));
      }
    }
  const profileDir = process.env.PORTOLAN_BENCH_PROFILE;
  const portolan = await startPortolanProcess(
    source !== 'mock'
      ? ['--config-dir', configDir, '--data-dir', join(dir, 'data')]
      : ['--registries', 'mock', '--data-dir', join(dir, 'data')],
    { timeoutMs: 300_000, nodeArgs: profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [] },
  );
  if (source === 'mock') await populateMock(portolan.httpBase, services);
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
    await waitQuiet(portolan.pid);
    const idlePerSecond = await idleRate(portolan.pid, IDLE_SECONDS);
    let cpuStart = 0;
    let started = 0;
    for (let g = 1; g <= WARMUP + CHANGES; g++) {
      if (g === WARMUP + 1) {
        cpuStart = cpuSeconds(portolan.pid);
        started = performance.now();
      }
      const at = performance.now();
      if (source === 'config-dir-vms') writeFileSync(vmPath(configDir, 0), vmFile(0, g));
      else if (source !== 'mock') writeFileSync(servicePath(configDir, source, 0), serviceFile(0, g));
      else await put(portolan.httpBase, `/mock/services/${host(0)}/endpoints`, endpointsOf(g));
      const marker = `"10.${(g >> 8) & 255}.${g & 255}.1"`;
      for (;;) {
        const res = await client.next(30_000);
        client.ack(res, [cluster]);
        if (JSON.stringify(decodedResources(res)).includes(marker)) break;
      }
      if (g > WARMUP) latencies.push(performance.now() - at);
      await sleep(Math.max(0, at + 1000 / RATE - performance.now()));
    }
    const seconds = (performance.now() - started) / 1000;
    const busy = Math.max(0, cpuSeconds(portolan.pid) - cpuStart - idlePerSecond * seconds);
    const sorted = [...latencies].sort((a, b) => a - b);
    return {
      source,
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

export async function churnBench(
  sizes: readonly number[] = SIZES,
  sources: readonly Source[] = ['config-dir', 'config-dir-sharded', 'config-dir-vms', 'mock'],
): Promise<ChurnResult[]> {
  const results: ChurnResult[] = [];
  for (const source of sources) {
    for (const n of sizes) results.push(await churnAt(source, n));
  }
  printTable(
    `Churn: one service's endpoints changed ${CHANGES}× at ${RATE}/s (a rewritten file, or a mock API PUT; after ${WARMUP} changes not counted), one stream watching them`,
    results.map((r) => {
      const base = results.find((b) => b.source === r.source);
      return {
        source: r.source,
        services: String(r.services),
        'server CPU per change (ms)': r.cpuMsPerChange.toFixed(1),
        'change → EDS p50 (ms)': r.p50.toFixed(0),
        'change → EDS p99 (ms)': r.p99.toFixed(0),
        'CPU ratio': base ? (r.cpuMsPerChange / base.cpuMsPerChange).toFixed(2) : '',
        'p99 ratio': base ? (r.p99 / base.p99).toFixed(2) : '',
      };
    }),
  );
  return results;
}
