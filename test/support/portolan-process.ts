// Runs `portolan serve` as a child process on ephemeral loopback ports, and stops it by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

export interface PortolanProcess {
  readonly pid: number;
  readonly xdsAddress: string;
  readonly httpBase: string;
  /** Every log line so far, parsed. */
  readonly logs: Record<string, unknown>[];
  stop(): Promise<void>;
}

export async function startPortolanProcess(
  args: readonly string[],
  { timeoutMs = 20_000 } = {},
): Promise<PortolanProcess> {
  const child = spawn(
    process.execPath,
    [MAIN, 'serve', '--xds-addr', '127.0.0.1:0', '--http-addr', '127.0.0.1:0', ...args],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
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
  const timer = sleep(timeoutMs).then(() => {
    throw new Error(`portolan did not start within ${timeoutMs} ms`);
  });
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
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(child.pid, 'SIGTERM');
  const done = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
  if (!done) {
    process.kill(child.pid, 'SIGKILL');
    await exited;
  }
}
