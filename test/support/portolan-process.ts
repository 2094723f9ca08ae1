// Runs `portolan serve` as a child process on ephemeral loopback ports, and stops it by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { NODE_FLAGS } from '../../cli/node-flags.js';
import { killOnExit } from './kill-on-exit.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

export interface PortolanProcess {
  readonly pid: number;
  readonly xdsAddress: string;
  readonly httpBase: string;
  /** Every log line so far, parsed. */
  readonly logs: Record<string, unknown>[];
  /** SIGTERM, then SIGKILL after 5 s; resolves with how the process ended. */
  stop(): Promise<ExitInfo>;
}

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly killed: boolean;
}

export async function startPortolanProcess(
  args: readonly string[],
  { timeoutMs = 20_000, nodeArgs = [] }: { timeoutMs?: number; nodeArgs?: readonly string[] } = {},
): Promise<PortolanProcess> {
  const child = spawn(
    process.execPath,
    [
      ...NODE_FLAGS, // as `portolan serve` runs
      ...nodeArgs,
      MAIN,
      'serve',
      '--xds-addr',
      '127.0.0.1:0',
      '--http-addr',
      '127.0.0.1:0',
      '--secure-xds-addr',
      '127.0.0.1:0',
      ...args,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  killOnExit(child);
  const logs: Record<string, unknown>[] = [];
  const ready = new Promise<{ xds: string; http: string }>((resolve, reject) => {
    let buffer = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === 'portolan serving')
            resolve({ xds: String(entry.xdsAddress), http: String(entry.httpAddress) });
        } catch {
          logs.push({ raw: line });
        }
      }
    });
    child.once('exit', (code) =>
      reject(new Error(`portolan exited with ${code} before serving: ${JSON.stringify(logs)}`)),
    );
  });
  const timeout = new AbortController();
  const timer = sleep(timeoutMs, undefined, { signal: timeout.signal }).then(() => {
    throw new Error(`portolan did not start within ${timeoutMs} ms`);
  });
  timer.catch(() => {}); // settled either way; only the race below observes it
  try {
    const { xds, http } = await Promise.race([ready, timer]);
    return {
      pid: child.pid ?? 0,
      xdsAddress: xds,
      httpBase: `http://${http}`,
      logs,
      stop: () => stopChild(child),
    };
  } catch (err) {
    await stopChild(child);
    throw err;
  } finally {
    timeout.abort();
  }
}

async function stopChild(child: ChildProcess): Promise<ExitInfo> {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) {
    return { code: child.exitCode, signal: child.signalCode, killed: false };
  }
  const exited = new Promise<ExitInfo>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, killed: false })),
  );
  try {
    process.kill(child.pid, 'SIGTERM');
  } catch {
    // already gone (e.g. killed by the test); the exit event still comes
  }
  const done = await Promise.race([exited, sleep(5000).then(() => undefined)]);
  if (done) return done;
  process.kill(child.pid, 'SIGKILL');
  return { ...(await exited), killed: true };
}
