// A real PostgreSQL server for tests (Debian `postgresql`): initdb into a temporary directory,
// `postgres` started directly (so its pid is ours to stop) on a free loopback port, trust auth on
// 127.0.0.1 only. PostgreSQL refuses to run as root, so as root the server runs as the `postgres`
// user (setpriv, which execs it: the pid is the server's) in a directory that user owns. Stopped by pid (SIGINT: fast shutdown), then removed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eventually } from './eventually.js';
import { killOnExit } from './kill-on-exit.js';

export interface PostgresServer {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:PORT/DB` for a database created by `createDatabase`. */
  url(database: string): string;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (by pid) and keeps its data, so `start` can bring it back on the same port. */
  stop(): Promise<void>;
  /** Starts it again after `stop`, on the same port and data. */
  start(): Promise<void>;
  /** Stops it and deletes its directory. */
  destroy(): Promise<void>;
}

/** The directory holding initdb and postgres (the newest installed major version). */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const newest = versions[0];
  if (!newest)
    throw new Error(
      'PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)',
    );
  return join(root, newest, 'bin');
}

const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL binary, as the `postgres` user when we are root. */
function command(bin: string, args: string[]): [string, string[]] {
  return asRoot
    ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', bin, ...args]]
    : [bin, args];
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = postgresBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'portolan-pg-'));
  const data = join(dir, 'data');
  if (asRoot) {
    const ids = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gids = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    chownSync(dir, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
  }
  chmodSync(dir, 0o700);
  const [initCmd, initArgs] = command(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth=trust',
    '--no-sync',
    '-E',
    'UTF8',
  ]);
  const init = spawnSync(initCmd, initArgs, { encoding: 'utf8', timeout: 60_000 });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = '';

  const start = async (): Promise<void> => {
    const [cmd, args] = command(join(bin, 'postgres'), [
      '-D',
      data,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${dir}`,
      '-c',
      'fsync=off',
      '-c',
      'max_connections=100',
    ]);
    // setpriv execs the server in its own process: the pid we hold is the postmaster's.
    const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    killOnExit(proc);
    child = proc;
    proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
    await eventually(
      async () => {
        if (proc.exitCode !== null)
          throw new Error(`postgres exited (${proc.exitCode}): ${output.slice(-2000)}`);
        const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
        try {
          await client.connect();
          await client.query('SELECT 1');
          return true;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `PostgreSQL on 127.0.0.1:${port}` },
    );
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.pid === undefined) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill('SIGINT'); // fast shutdown: aborts sessions, exits cleanly
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (proc.exitCode === null) {
      proc.kill('SIGKILL');
      await exited;
    }
  };

  await start();
  const url = (database: string): string => `postgres://postgres@127.0.0.1:${port}/${database}`;
  return {
    port,
    url,
    async createDatabase(name) {
      const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    stop,
    start,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
