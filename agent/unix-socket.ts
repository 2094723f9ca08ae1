// Unix sockets the agent serves on (xDS, SDS): a stale socket file from a previous run is removed,
// a live one (another agent) is a clear error, and once bound the socket is limited to the agent's
// user and group (0660), in a directory only they can enter (0750).
import { chmodSync, lstatSync, mkdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';

/** The longest path a Unix socket address holds on Linux (sun_path, less the terminating NUL). */
export const MAX_SOCKET_PATH = 107;

export class SocketError extends Error {}

/** Makes `path` ready to bind: its directory exists, nothing live is on it. */
export async function prepareSocket(path: string): Promise<void> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH)
    throw new SocketError(
      `${path}: a Unix socket path is at most ${MAX_SOCKET_PATH} bytes; choose a shorter one`,
    );
  mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
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

/** After binding: only the agent's user and group may connect. */
export function restrictSocket(path: string): void {
  chmodSync(path, 0o660);
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
