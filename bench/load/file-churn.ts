// A churn run against a config-directory server (or the bare edit loop): changes made at a steady
// rate, each rewriting one service's file with an endpoint address that encodes its number, and
// what they cost — the process's CPU per change (whole process and main thread, the idle rate
// subtracted), its collections, and change → every watching stream. Used by bench/churn-streams.ts
// and bench/storm-10k.ts.
import { setTimeout as sleep } from 'node:timers/promises';
import { paced, type Helper } from './fleet.js';
import type { GeneratorArrivals, ToGenerator } from './load-generator.js';
import { gcCounts } from './metrics.js';
import { cpuReading, cpuSince, idleRates, waitQuiet } from './proc.js';
import { generationAddresses, host, type ConfigDirPortolan } from './service-files.js';
import { markerAddress, wallNow } from './wire-lite.js';

const IDLE_SECONDS = 3;
const CONVERGE_MS = 15_000;
const BASE = generationAddresses(0).slice(1);

/** What a churn run changes: a process, and how to rewrite service i's file. */
export interface EditTarget {
  readonly pid: number;
  /** The server's HTTP base, for its garbage collections (/metrics); none for the bare edit loop. */
  readonly httpBase?: string;
  rewrite(i: number, addresses: readonly string[]): void;
}

export const editsOf = (server: ConfigDirPortolan): EditTarget => ({
  pid: server.portolan.pid,
  httpBase: server.portolan.httpBase,
  rewrite: (i, addresses) => server.rewrite(i, addresses),
});

export interface ChurnOutcome {
  readonly changes: number;
  /** Change → its last watching stream, ms, sorted. */
  readonly convergence: number[];
  /** Changes some watching stream never received (within CONVERGE_MS of the last change). */
  readonly missed: number;
  /** Server CPU while the changes were made, as a share of one core. */
  readonly cpuShare: number;
  /**
   * Server CPU per change from the first change until all arrived, the idle rate subtracted, ms: the
   * whole process (every thread: garbage collection, the compiler, libuv).
   */
  readonly cpuMsPerChange: number;
  /** The same, the main thread alone (what the JavaScript itself costs). */
  readonly mainMsPerChange: number;
  /**
   * The server's collections over the window (its /metrics), and bytes allocated per change estimated
   * as scavenges × the young generation's size (what each scavenge empties); none without metrics.
   */
  readonly gc?: { readonly scavenges: number; readonly full: number; readonly allocatedPerChange: number };
  readonly idleShare: number;
}

async function arrivals(generators: readonly Helper[]): Promise<GeneratorArrivals['streams']> {
  const all = await Promise.all(
    generators.map((g) => g.ask<GeneratorArrivals>({ cmd: 'arrivals' } satisfies ToGenerator)),
  );
  return all.flatMap((a) => a.streams);
}

/** Per change: when its last watching stream received it (NaN if one has not). */
function reachedAt(
  streams: GeneratorArrivals['streams'],
  changedAt: readonly number[],
  serviceOf: (seq: number) => number,
): number[] {
  const byHost = new Map<string, GeneratorArrivals['streams']>();
  for (const s of streams) byHost.set(s.host, [...(byHost.get(s.host) ?? []), s]);
  const out: number[] = [];
  for (let c = 1; c < changedAt.length; c++) {
    const watchers = byHost.get(host(serviceOf(c))) ?? [];
    const made = changedAt[c] ?? 0;
    let last = watchers.length === 0 ? NaN : 0;
    for (const w of watchers)
      last = Math.max(last, w.marks.find(([seq, at]) => seq >= c && at >= made)?.[1] ?? NaN);
    out[c] = last;
  }
  return out;
}

/**
 * `count` changes at `rate`/s, change seq rewriting service serviceOf(seq)'s file; with `generators`,
 * waits (bounded) until every change reached its watching streams.
 */
export async function churnFiles(
  target: EditTarget,
  generators: readonly Helper[],
  count: number,
  rate: number,
  serviceOf: (seq: number) => number,
  markerBase = 0,
  /** Change seq's write; default: service serviceOf(seq)'s file, with seq's marker address. */
  write = (seq: number): void => target.rewrite(serviceOf(seq), [...BASE, markerAddress(markerBase + seq)]),
): Promise<ChurnOutcome> {
  const pid = target.pid;
  await waitQuiet(pid, 60);
  // Read before the windows: rendering the metrics is not a change's work.
  const gcFrom = target.httpBase ? await gcCounts(target.httpBase) : undefined;
  const idle = await idleRates(pid, IDLE_SECONDS);
  const cpuFrom = cpuReading(pid);
  const started = wallNow();
  const changedAt = await paced(count, rate, write);
  const cpuShare = cpuSince(cpuFrom, pid).whole / ((wallNow() - started) / 1000);
  let reached: number[] = [];
  const deadline = wallNow() + CONVERGE_MS;
  for (;;) {
    if (generators.length === 0) {
      await sleep(1000); // no streams: the last change's work is done within the windows
      break;
    }
    reached = reachedAt(await arrivals(generators), changedAt, serviceOf);
    if (reached.slice(1).every((t) => !Number.isNaN(t)) || wallNow() > deadline) break;
    await sleep(250);
  }
  const seconds = (wallNow() - started) / 1000;
  const used = cpuSince(cpuFrom, pid);
  const busy = Math.max(0, used.whole - idle.whole * seconds);
  const busyMain = Math.max(0, used.main - idle.main * seconds);
  const gcTo = target.httpBase ? await gcCounts(target.httpBase) : undefined;
  const convergence: number[] = [];
  let missed = 0;
  for (let c = 1; c < reached.length; c++) {
    const t = reached[c] ?? NaN;
    if (Number.isNaN(t)) missed += 1;
    else convergence.push(t - (changedAt[c] ?? 0));
  }
  return {
    changes: count,
    convergence: convergence.sort((a, b) => a - b),
    missed,
    cpuShare,
    cpuMsPerChange: (busy * 1000) / count,
    mainMsPerChange: (busyMain * 1000) / count,
    ...(gcFrom &&
      gcTo && {
        gc: {
          scavenges: gcTo.scavenges - gcFrom.scavenges,
          full: gcTo.full - gcFrom.full,
          allocatedPerChange: ((gcTo.scavenges - gcFrom.scavenges) * gcTo.newSpaceBytes) / count,
        },
      }),
    idleShare: idle.whole,
  };
}
