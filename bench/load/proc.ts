// What a benchmark reads of another process from /proc: CPU time (the whole process's and its main
// thread's), resident memory, and a bounded wait for it to fall quiet.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const CLK_TCK = 100;

/** A thread's run time in seconds from /proc/PID/task/TID/schedstat (ns); undefined when unreadable. */
function threadSeconds(pid: number, tid: number | string): number | undefined {
  try {
    const ns = Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    return Number.isFinite(ns) ? ns / 1e9 : undefined;
  } catch {
    return undefined; // the thread ended, or no schedstat on this kernel
  }
}

/** utime + stime of /proc/PID/stat in seconds: every thread, alive or exited, in 10 ms ticks. */
function statSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/**
 * CPU seconds the whole process has used: every thread — the main (JavaScript) thread, V8's
 * garbage-collection and compiler threads, libuv's pool. The sum of the live threads' schedstat
 * (nanoseconds), or /proc/PID/stat's utime + stime where that is larger: a thread that exited takes
 * its schedstat with it, and stat keeps it (in 10 ms ticks).
 */
export function cpuSeconds(pid: number): number {
  let live = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) live += threadSeconds(pid, tid) ?? 0;
  } catch {
    // the process is gone or has no task list: stat below decides
  }
  return Math.max(live, statSeconds(pid));
}

/** CPU seconds of the process's main thread alone (its JavaScript; what a V8 profile sees). */
export function mainThreadSeconds(pid: number): number {
  return threadSeconds(pid, pid) ?? NaN;
}

/** The whole process's and its main thread's CPU seconds, read together. */
export interface CpuReading {
  readonly whole: number;
  readonly main: number;
}

export function cpuReading(pid: number): CpuReading {
  return { main: mainThreadSeconds(pid), whole: cpuSeconds(pid) };
}

/** CPU used between two readings. */
export function cpuSince(from: CpuReading, pid: number): CpuReading {
  const to = cpuReading(pid);
  return { whole: to.whole - from.whole, main: to.main - from.main };
}

/** Resident set size in bytes (/proc/PID/status VmRSS). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

/** Whether the process is still there. */
export function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}/stat`);
}

/**
 * Waits (at most `maxSeconds`) for QUIET_SECONDS seconds in a row in which the process used ≤ 50 ms
 * of CPU each; returns at once if it has exited (the caller tells that with `alive`). Three, not one:
 * the server's settle collection (cli/settle-collector.ts) runs about two seconds into an idle spell,
 * and an idle rate measured over it would be inflated (and subtracted from a change's cost).
 */
export async function waitQuiet(pid: number, maxSeconds = 60): Promise<void> {
  let quiet = 0;
  for (let i = 0; i < maxSeconds && alive(pid); i++) {
    try {
      const before = cpuSeconds(pid);
      await sleep(1000);
      quiet = cpuSeconds(pid) - before <= 0.05 ? quiet + 1 : 0;
      if (quiet >= QUIET_SECONDS) return;
    } catch (err) {
      if (alive(pid)) throw err;
    }
  }
}

const QUIET_SECONDS = 3;

/** The process's idle CPU rate (seconds per second) over `seconds`: whole process and main thread. */
export async function idleRates(pid: number, seconds: number): Promise<CpuReading> {
  const from = cpuReading(pid);
  await sleep(seconds * 1000);
  const used = cpuSince(from, pid);
  return { whole: used.whole / seconds, main: used.main / seconds };
}

/** The whole process's idle CPU rate (seconds per second) over `seconds`. */
export async function idleRate(pid: number, seconds: number): Promise<number> {
  return (await idleRates(pid, seconds)).whole;
}
