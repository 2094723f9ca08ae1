// The demo's control plane: one already serving at the admin address (`npm start` in another
// terminal) is used as it is; otherwise `portolan serve` is started as a child process on the given
// config directory, with a fresh data directory, and stopped by its PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));

export interface ControlPlane {
  readonly xdsAddress: string;
  readonly adminBase: string;
  /** The child's PID; undefined when the demo uses a control plane it did not start. */
  readonly pid: number | undefined;
  /** The watched config directory, as the control plane reports it (/debug/configz). */
  configDir(): Promise<string | undefined>;
  stop(): Promise<void>;
}

export interface ControlPlaneOptions {
  readonly configDir: string;
  /** host:port; port 0 picks a free one. */
  readonly xdsAddr: string;
  readonly httpAddr: string;
  /** Use a control plane already answering at httpAddr (and serving xDS at xdsAddr). */
  readonly attach: boolean;
  readonly timeoutMs?: number;
}

export async function controlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const running = options.attach && (await answers(`http://${options.httpAddr}/ready`));
  const plane = running
    ? attached(options.xdsAddr, `http://${options.httpAddr}`)
    : await startServe(options, timeoutMs);
  try {
    await waitReady(plane.adminBase, timeoutMs);
  } catch (err) {
    await plane.stop();
    throw err;
  }
  return plane;
}

function attached(xdsAddress: string, adminBase: string): ControlPlane {
  return {
    xdsAddress,
    adminBase,
    pid: undefined,
    configDir: () => configDirOf(adminBase),
    stop: async () => {},
  };
}

async function startServe(options: ControlPlaneOptions, timeoutMs: number): Promise<ControlPlane> {
  const dataDir = mkdtempSync(join(tmpdir(), 'portolan-demo-'));
  const child = spawn(
    process.execPath,
    [
      MAIN,
      'serve',
      '--registries',
      'config',
      '--config-dir',
      options.configDir,
      '--data-dir',
      dataDir,
      '--xds-addr',
      options.xdsAddr,
      '--http-addr',
      options.httpAddr,
      // The secure port (CA and mTLS xDS) is not part of the demo.
      '--secure-xds-addr',
      'off',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const stop = async (): Promise<void> => {
    await stopChild(child);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const { xds, http } = await serving(child, timeoutMs);
    const adminBase = `http://${http}`;
    return { xdsAddress: xds, adminBase, pid: child.pid, configDir: () => configDirOf(adminBase), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The addresses from the "portolan serving" log line (JSON lines on stderr). */
function serving(child: ChildProcess, timeoutMs: number): Promise<{ xds: string; http: string }> {
  return new Promise((resolve, reject) => {
    const recent: string[] = [];
    let buffer = '';
    const timer = setTimeout(() => fail(`did not start within ${timeoutMs} ms`), timeoutMs);
    const fail = (why: string): void => {
      clearTimeout(timer);
      reject(new Error(`portolan serve ${why}; its last log lines:\n${recent.join('\n')}`));
    };
    child.once('exit', (code) => fail(`exited (${code})`));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        recent.push(line);
        if (recent.length > 20) recent.shift();
        const entry = parseJson(line);
        if (entry?.msg === 'portolan serving') {
          clearTimeout(timer);
          resolve({ xds: String(entry.xdsAddress), http: String(entry.httpAddress) });
        }
      }
    });
  });
}

/** SIGTERM by PID (the server drains its streams), SIGKILL after 5 s. */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(killer);
}

async function waitReady(adminBase: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${adminBase}/ready`, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = String(err);
    }
    await sleep(200);
  }
  throw new Error(`the control plane at ${adminBase} did not become ready: ${last}`);
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(1_000) });
    return true;
  } catch {
    return false;
  }
}

async function configDirOf(adminBase: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${adminBase}/debug/configz`, { signal: AbortSignal.timeout(2_000) });
    const body = (await res.json()) as { dir?: unknown };
    return typeof body.dir === 'string' ? body.dir : undefined;
  } catch {
    return undefined;
  }
}

function parseJson(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
