// Runs `portolan agent` as a child process (the real CLI), on ephemeral loopback ports, and stops it
// by PID. Its addresses come from its "portolan agent serving" log line.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExitInfo } from './portolan-process.js';
import { killOnExit } from './kill-on-exit.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

export interface AgentProcess {
  readonly pid: number;
  /** The plaintext local xDS address (HOST:PORT); the first workload's socket (`unix:…`) without one. */
  readonly xdsAddress: string;
  readonly statusBase: string;
  /** The DNS proxy's HOST:PORT (UDP and TCP), unless --no-dns. */
  readonly dnsAddress?: string;
  /** The command the agent supervises, if any. */
  readonly commandPid?: number;
  readonly logs: Record<string, unknown>[];
  /** SIGTERM (then SIGKILL after `graceMs`); resolves with how it ended. */
  stop(graceMs?: number): Promise<ExitInfo>;
  /** SIGKILL: a crash. */
  kill(): Promise<ExitInfo>;
  exited(): Promise<ExitInfo>;
}

export async function startAgentProcess(
  args: readonly string[],
  {
    timeoutMs = 30_000,
    env = {},
    tcpXds = true,
  }: {
    timeoutMs?: number;
    env?: Record<string, string>;
    /** false: no `--listen-xds 127.0.0.1:0` (refused with --workload: local xDS on the sockets only). */
    tcpXds?: boolean;
  } = {},
): Promise<AgentProcess> {
  const child = spawn(
    process.execPath,
    // The DNS proxy on an ephemeral port too, so agents in parallel tests do not share one.
    [
      MAIN,
      'agent',
      ...(tcpXds ? ['--listen-xds', '127.0.0.1:0'] : []),
      '--status-addr',
      '127.0.0.1:0',
      '--dns-addr',
      '127.0.0.1:0',
      ...args,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } },
  );
  killOnExit(child);
  const logs: Record<string, unknown>[] = [];
  const exit = new Promise<ExitInfo>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, killed: false })),
  );
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
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
          if (entry.msg === 'portolan agent serving') resolve(entry);
        } catch {
          logs.push({ raw: line });
        }
      }
    });
    void exit.then((e) =>
      reject(
        new Error(`portolan agent exited (${e.code ?? e.signal}) before serving: ${JSON.stringify(logs)}`),
      ),
    );
  });
  const timeout = sleep(timeoutMs).then(() => {
    throw new Error(`portolan agent did not start within ${timeoutMs} ms: ${JSON.stringify(logs)}`);
  });
  timeout.catch(() => {});
  const stop = async (graceMs = 30_000): Promise<ExitInfo> => {
    if (child.exitCode !== null || child.signalCode !== null) return exit;
    signal(child, 'SIGTERM');
    const done = await Promise.race([exit, sleep(graceMs).then(() => undefined)]);
    if (done) return done;
    signal(child, 'SIGKILL');
    return { ...(await exit), killed: true };
  };
  try {
    const serving = await Promise.race([ready, timeout]);
    const xds = (serving.xds as string[])[0] ?? '';
    return {
      pid: child.pid ?? 0,
      xdsAddress: xds,
      statusBase: `http://${String(serving.status)}`,
      ...(typeof serving.dns === 'string' && { dnsAddress: serving.dns }),
      ...(typeof serving.commandPid === 'number' && { commandPid: serving.commandPid }),
      logs,
      stop,
      kill: async () => {
        signal(child, 'SIGKILL');
        return exit;
      },
      exited: () => exit,
    };
  } catch (err) {
    await stop(5000);
    throw err;
  }
}

function signal(child: ChildProcess, sig: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(child.pid, sig);
  } catch {
    // already gone
  }
}
