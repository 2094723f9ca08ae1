// Unix sockets the agent serves on (xDS, SDS): a stale socket file from a previous run is removed,
// a live one (another agent) is a clear error, and the socket is limited to the agent's user and
// group (0660) from the moment it exists — bound under a umask that leaves nothing else, not
// chmodded after listen (a window in which anyone could connect). Its directory (the run dir) is
// created 0750; an existing one must belong to the agent's user and not be group- or world-writable,
// since whoever may write there may replace the agent's sockets with their own.
import { chmodSync, lstatSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';

/** The longest path a Unix socket address holds on Linux (sun_path, less the terminating NUL). */
export const MAX_SOCKET_PATH = 107;

/** The mode every agent socket has: its user and group may connect. */
export const SOCKET_MODE = 0o660;

export class SocketError extends Error {}

/** Makes `path` ready to bind: its directory exists and is the agent's own, nothing live is on it. */
export async function prepareSocket(path: string): Promise<void> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH)
    throw new SocketError(
      `${path}: a Unix socket path is at most ${MAX_SOCKET_PATH} bytes (this one is ${Buffer.byteLength(path)}); choose a shorter one`,
    );
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  checkSocketDir(dir);
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return; // nothing there
  }
  if (!isSocket)
    throw new SocketError(`${path} exists and is not a socket: remove it or choose another path`);
  if (await listening(path)) throw new SocketError(`${path}: another process serves on it (another agent?)`);
  rmSync(path, { force: true });
}

/** Refuses a socket directory another user owns or others may write to. */
export function checkSocketDir(dir: string): void {
  const st = statSync(dir);
  if (!st.isDirectory()) throw new SocketError(`${dir} is not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid)
    throw new SocketError(
      `${dir} belongs to uid ${st.uid}, not to the agent's user (uid ${uid}): its sockets could be replaced by another user; use a directory of the agent's own (--run-dir)`,
    );
  if ((st.mode & 0o022) !== 0)
    throw new SocketError(
      `${dir} is writable by ${st.mode & 0o002 ? 'everyone' : 'its group'} (mode ${(st.mode & 0o777).toString(8)}): its sockets could be replaced; chmod 750 it or use another --run-dir`,
    );
}

/**
 * Runs `bind` (which creates Unix sockets) under a umask that gives them SOCKET_MODE at birth, and
 * restores the umask after. Nothing else of the agent may create files meanwhile (agent.ts binds
 * before anything else starts); what did would only get fewer permissions, never more.
 */
export async function bindRestricted<T>(bind: () => Promise<T>): Promise<T> {
  const previous = process.umask(0o777 & ~SOCKET_MODE);
  try {
    return await bind();
  } finally {
    process.umask(previous);
  }
}

/** Belt and braces after binding: the mode, whatever the platform did with the umask. */
export function restrictSocket(path: string): void {
  chmodSync(path, SOCKET_MODE);
}

function listening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    const done = (live: boolean): void => {
      socket.destroy();
      resolve(live);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
