// A private ZooKeeper server for tests: Debian's `zookeeper` package (apt-get install zookeeper),
// standalone, on a free loopback port, with its own temporary config and data directory. It can be
// stopped and started again on the same port and data (a server restart), and is stopped by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  closeSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { killOnExit } from './kill-on-exit.js';

/** Debian's jar; its manifest's Class-Path names every dependency under /usr/share/java. */
export const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';

export interface ZooKeeperServer {
  readonly port: number;
  /** `127.0.0.1:PORT`, for `--zk-hosts`. */
  readonly connectString: string;
  /** PID of the running server, or undefined while stopped. */
  pid(): number | undefined;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s); its data stays. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it and deletes its directory. */
  destroy(): Promise<void>;
  /**
   * Whether the server still holds the session `id` (hex, as `0x…` with or without leading zeros),
   * read from its `dump` command: the only way to see a session expire on the server's side.
   */
  hasSession(id: string): Promise<boolean>;
}

export interface ZooKeeperServerOptions {
  /** ZooKeeper's tick; sessions may time out between 2 and 20 ticks. */
  readonly tickTimeMs?: number;
  readonly startTimeoutMs?: number;
}

export async function startZooKeeperServer(options: ZooKeeperServerOptions = {}): Promise<ZooKeeperServer> {
  if (!existsSync(ZOOKEEPER_JAR)) {
    throw new Error(
      `${ZOOKEEPER_JAR} is missing: install ZooKeeper with apt-get install zookeeper (npm test does, as root)`,
    );
  }
  const dir = mkdtempSync(join(tmpdir(), 'portolan-zk-'));
  const port = await freePort();
  const tickTimeMs = options.tickTimeMs ?? 200;
  mkdirSync(join(dir, 'data'));
  writeFileSync(
    join(dir, 'zoo.cfg'),
    [
      `tickTime=${tickTimeMs}`,
      `dataDir=${join(dir, 'data')}`,
      `clientPort=${port}`,
      'clientPortAddress=127.0.0.1',
      `minSessionTimeout=${2 * tickTimeMs}`,
      'maxSessionTimeout=60000',
      'admin.enableServer=false',
      '4lw.commands.whitelist=srvr,ruok,dump',
      '',
    ].join('\n'),
  );

  let child: ChildProcess | undefined;
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;

  const server: ZooKeeperServer = {
    port,
    connectString: `127.0.0.1:${port}`,
    pid: () => child?.pid,
    async start() {
      if (child) return;
      const log = openSync(join(dir, 'server.log'), 'a');
      const proc = spawn(
        'java',
        [
          '-Xmx128m',
          '-XX:+UseSerialGC',
          '-XX:TieredStopAtLevel=1',
          '-Dzookeeper.admin.enableServer=false',
          '-cp',
          ZOOKEEPER_JAR,
          'org.apache.zookeeper.server.ZooKeeperServerMain',
          join(dir, 'zoo.cfg'),
        ],
        { stdio: ['ignore', log, log] },
      );
      closeSync(log);
      child = proc;
      proc.once('exit', () => {
        if (child === proc) child = undefined;
      });
      killOnExit(proc);
      try {
        await waitUntilServing(port, proc, startTimeoutMs);
      } catch (err) {
        await server.stop();
        const output = readFileSync(join(dir, 'server.log'), 'utf8').slice(-2000);
        throw new Error(`${(err as Error).message}\n${output}`);
      }
    },
    async stop() {
      const proc = child;
      if (!proc?.pid) return;
      child = undefined;
      await stopProcess(proc);
    },
    async destroy() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
    async hasSession(id) {
      const dump = await fourLetterWord(port, 'dump');
      // "SessionTracker dump:" lists every live session, one `0x…` per line, until the ephemerals.
      const start = dump.indexOf('SessionTracker dump:');
      const end = dump.indexOf('ephemeral nodes dump:');
      if (start < 0 || end < start) throw new Error(`no session dump from ZooKeeper on port ${port}`);
      const wanted = BigInt(id);
      return dump
        .slice(start, end)
        .split('\n')
        .some((line) => /^\s*0x[0-9a-f]+\s*$/i.test(line) && BigInt(line.trim()) === wanted);
    },
  };
  await server.start();
  return server;
}

/** Sends a four-letter command and returns the whole answer ('' if the connection failed). */
export function fourLetterWord(port: number, word: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let answer = '';
    socket.setTimeout(timeoutMs, () => socket.destroy());
    socket.on('connect', () => socket.end(word));
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer));
  });
}

async function waitUntilServing(port: number, proc: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`ZooKeeper exited with ${proc.exitCode ?? proc.signalCode} before serving`);
    }
    // `srvr` answers "not currently serving" until the server has loaded its data.
    if ((await fourLetterWord(port, 'srvr')).includes('Mode: standalone')) return;
    await sleep(100);
  }
  throw new Error(`ZooKeeper did not serve on 127.0.0.1:${port} within ${timeoutMs} ms`);
}

async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null || !proc.pid) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  process.kill(proc.pid, 'SIGTERM');
  const done = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
  if (done) return;
  process.kill(proc.pid, 'SIGKILL');
  await exited;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
