// The agent's Unix sockets (agent/unix-socket.ts, issue #45 item 12): a socket has its mode from the
// moment it exists (bound under the umask, not chmodded after listen), a socket directory that
// others may write to or another user owns is refused, a path over sun_path's 107 bytes is a clear
// error, a stale socket is removed and a live one refused. Real sockets in a temporary directory.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  bindRestricted,
  checkSocketDir,
  MAX_SOCKET_PATH,
  prepareSocket,
  SocketError,
  SOCKET_MODE,
} from '../../../agent/unix-socket.js';

const dir = mkdtempSync(join(tmpdir(), 'portolan-sock-'));
const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A socket file left by a process that crashed (SIGKILL: no close, no unlink). */
async function staleSocket(path: string): Promise<void> {
  const child = spawn(
    process.execPath,
    ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => console.log('up'))`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the listener exited (${code})`)));
  });
  const gone = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await gone;
}

function listen(path: string): Promise<Server> {
  const server = createServer();
  servers.push(server);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve(server));
  });
}

test('a socket bound through bindRestricted has its mode at birth, before anyone could chmod it', async () => {
  const path = join(dir, 'birth.sock');
  await prepareSocket(path);
  const before = process.umask();
  const modeAtBirth = await bindRestricted(async () => {
    await listen(path);
    // The moment listen returns, nothing has chmodded the socket yet.
    return lstatSync(path).mode & 0o777;
  });
  assert.equal(modeAtBirth.toString(8), SOCKET_MODE.toString(8));
  assert.equal(process.umask(), before, 'the umask is restored');
});

test('a socket path over 107 bytes is refused with the reason', async () => {
  const long = join(dir, `${'s'.repeat(MAX_SOCKET_PATH)}.sock`);
  await assert.rejects(prepareSocket(long), (err: Error) => {
    assert.ok(err instanceof SocketError);
    assert.match(err.message, /at most 107 bytes \(this one is \d+\)/);
    return true;
  });
});

test('a stale socket is removed; a live one, or a file that is not a socket, is refused', async () => {
  const stale = join(dir, 'stale.sock');
  await staleSocket(stale);
  assert.equal(lstatSync(stale).isSocket(), true, 'the crashed process left its socket');
  await prepareSocket(stale);
  assert.throws(() => lstatSync(stale), /ENOENT/);
  const live = join(dir, 'live.sock');
  await listen(live);
  await assert.rejects(prepareSocket(live), /another process serves on it/);
  const file = join(dir, 'plain');
  writeFileSync(file, '');
  await assert.rejects(prepareSocket(file), /is not a socket/);
});

test('a socket directory writable by others, or another user’s, is refused', async () => {
  const open = join(dir, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  await assert.rejects(prepareSocket(join(open, 'xds.sock')), /writable by everyone \(mode 777\)/);
  chmodSync(open, 0o770);
  assert.throws(() => checkSocketDir(open), /writable by its group/);
  chmodSync(open, 0o750);
  checkSocketDir(open);
  // Another owner needs root to set up.
  if (process.getuid?.() === 0) {
    chownSync(open, 65534, 65534);
    assert.throws(() => checkSocketDir(open), /belongs to uid 65534, not to the agent's user/);
  }
});
