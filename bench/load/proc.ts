// What a benchmark reads of another process from /proc: CPU time, resident memory, and a bounded
// wait for it to fall quiet.
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const CLK_TCK = 100;

/**
 * CPU seconds the process has used: the sum of its threads' run time in nanoseconds
 * (/proc/PID/task/TID/schedstat), or, where that is missing, utime + stime in clock ticks
 * (/proc/PID/stat; 10 ms steps, too coarse for a few milliseconds per change over a few seconds).
 * A thread that has exited takes its time with it: Portolan's threads (libuv's pool, V8's helpers)
 * live as long as the process.
 */
export function cpuSeconds(pid: number): number {
  try {
    let nanoseconds = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        nanoseconds += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended between the listing and the read
      }
    }
    if (nanoseconds > 0) return nanoseconds / 1e9;
  } catch {
    // no schedstat on this kernel: fall back to ticks
  }
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** Resident set size in bytes (/proc/PID/status VmRSS). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

/** Waits (at most `maxSeconds`) for a second in which the process used ≤ 50 ms of CPU. */
export async function waitQuiet(pid: number, maxSeconds = 60): Promise<void> {
  for (let i = 0; i < maxSeconds; i++) {
    const before = cpuSeconds(pid);
    await sleep(1000);
    if (cpuSeconds(pid) - before <= 0.05) return;
  }
}

/** The process's idle CPU rate (seconds per second) over `seconds`. */
export async function idleRate(pid: number, seconds: number): Promise<number> {
  const from = cpuSeconds(pid);
  await sleep(seconds * 1000);
  return (cpuSeconds(pid) - from) / seconds;
}
