// The parent's side of the load: helper processes (load generators, the raw server) forked and
// talked to over IPC, the connect storm across the generators, and changes made at a steady rate.
// Used by bench/push-scale.ts, bench/proxyless-storm.ts, bench/churn-streams.ts and bench/storm-10k.ts.
import { fork, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { GeneratorStatus, ToGenerator } from './load-generator.js';
import type { StreamSpec } from './sim-stream.js';
import { wallNow } from './wire-lite.js';

export const GENERATOR_MAIN = fileURLToPath(new URL('./load-generator.js', import.meta.url));
export const RAW_MAIN = fileURLToPath(new URL('./raw-ads-server.js', import.meta.url));

/** A forked helper process, talked to over IPC, stopped by PID. */
export class Helper {
  private readonly waiters: ((msg: Record<string, unknown>) => void)[] = [];
  constructor(readonly child: ChildProcess) {
    child.on('message', (msg: Record<string, unknown>) => this.waiters.shift()?.(msg));
  }
  static start(main: string, args: string[] = []): Helper {
    // PORTOLAN_BENCH_PROFILE=DIR profiles the raw server too, for a profile to set Portolan's beside.
    const profile = process.env.PORTOLAN_BENCH_PROFILE;
    const profileArgs = profile && main === RAW_MAIN ? ['--cpu-prof', '--cpu-prof-dir', profile] : [];
    return new Helper(
      fork(main, args, {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        execArgv: ['--max-old-space-size=4096', ...profileArgs],
      }),
    );
  }
  get pid(): number {
    return this.child.pid ?? 0;
  }
  next<T>(): Promise<T> {
    return new Promise((resolve) => this.waiters.push((m) => resolve(m as T)));
  }
  ask<T>(msg: object): Promise<T> {
    const reply = this.next<T>();
    this.child.send(msg);
    return reply;
  }
  async stop(): Promise<void> {
    const pid = this.child.pid;
    if (!pid || this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.on('error', () => {}); // a closed IPC channel: the kill below still applies
    if (this.child.connected) this.child.send({ cmd: 'close' });
    const done = await Promise.race([exited.then(() => true), sleep(3000).then(() => false)]);
    if (!done && this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

export function startGenerators(count: number): Helper[] {
  return Array.from({ length: count }, () => Helper.start(GENERATOR_MAIN));
}

export async function statusOf(generators: readonly Helper[]): Promise<GeneratorStatus[]> {
  return Promise.all(generators.map((g) => g.ask<GeneratorStatus>({ cmd: 'status' } satisfies ToGenerator)));
}

/** Responses and their bytes received so far, across the generators. */
export async function receivedBy(
  generators: readonly Helper[],
): Promise<{ responses: number; bytes: number }> {
  const all = await statusOf(generators);
  return {
    responses: all.reduce((n, s) => n + s.responses, 0),
    bytes: all.reduce((n, s) => n + s.bytes, 0),
  };
}

/** Streams to open together: each generator's list, `perConnection` of them to an HTTP/2 connection. */
export interface StreamBatch {
  readonly group: { readonly perConnection: number };
  readonly perGenerator: readonly (readonly StreamSpec[])[];
}

export interface StormResult {
  /** From the first open to the last stream holding its full config. */
  readonly seconds: number;
  readonly configured: number;
  readonly total: number;
  readonly errors: number;
  readonly firstError?: string;
}

/** Opens the streams and waits until every one holds its full config (or the timeout passes). */
export async function connectStorm(
  generators: readonly Helper[],
  address: string,
  batches: readonly StreamBatch[],
  timeoutMs: number,
  {
    clusters = [],
    capture = false,
    ownSources = true,
  }: {
    clusters?: readonly string[];
    capture?: boolean;
    /** Each connection from its own loopback address (load/source-address.ts), as a fleet's proxies; default on. */
    ownSources?: boolean;
  } = {},
): Promise<StormResult> {
  const started = wallNow();
  // Source addresses numbered across batches and generators, so no two connections share one.
  let source = 0;
  for (const { group, perGenerator } of batches) {
    const firsts = perGenerator.map((streams) => {
      const first = source;
      source += Math.ceil(streams.length / group.perConnection);
      return first;
    });
    await Promise.all(
      generators.map((g, i) =>
        g.ask({
          cmd: 'open',
          address,
          streams: perGenerator[i] ?? [],
          perConnection: group.perConnection,
          clusters,
          capture,
          ...(ownSources && { firstSource: firsts[i] ?? 0 }),
        } satisfies ToGenerator),
      ),
    );
  }
  const total = batches.reduce((n, d) => n + d.perGenerator.reduce((m, l) => m + l.length, 0), 0);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await statusOf(generators);
    const configured = all.reduce((n, s) => n + s.configured, 0);
    const errors = all.reduce((n, s) => n + s.errors, 0);
    const firstError = all.find((s) => s.firstError)?.firstError;
    if (configured === total || Date.now() > deadline) {
      const last = Math.max(...all.map((s) => s.lastConfiguredAt));
      return {
        seconds: (last - started) / 1000,
        configured,
        total,
        errors,
        ...(firstError && { firstError }),
      };
    }
    await sleep(250);
  }
}

/** Closes every generator's streams and connections (the generators stay up). */
export async function resetStreams(generators: readonly Helper[]): Promise<void> {
  await Promise.all(generators.map((g) => g.ask({ cmd: 'reset' } satisfies ToGenerator)));
}

/** Makes changes 1..count at `rate` per second through `apply`; returns when each was made (wall ms, by seq). */
export async function paced(
  count: number,
  rate: number,
  apply: (seq: number) => Promise<void> | void,
): Promise<number[]> {
  const changedAt: number[] = [];
  const start = wallNow();
  for (let seq = 1; seq <= count; seq++) {
    const due = start + ((seq - 1) * 1000) / rate;
    const wait = due - wallNow();
    if (wait > 0) await sleep(wait);
    changedAt[seq] = wallNow();
    await apply(seq);
  }
  return changedAt;
}
