// What a benchmark reads of another process from /proc: CPU time, resident memory, and a bounded
// wait for it to fall quiet.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const CLK_TCK = 100;

/** User + system CPU seconds the process has used (/proc/PID/stat utime + stime). */
export function cpuSeconds(pid: number): number {
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
