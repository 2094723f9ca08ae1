// Unix sockets the agent serves on (xDS, SDS): a stale socket file from a previous run is removed,
// a live one (another agent) is a clear error, and the socket is limited to the agent's user and
// group (0660) from the moment it exists — bound under a umask that leaves nothing else, not
// chmodded after listen (a window in which anyone could connect). Its directory (the run dir) is
// created 0750; an existing one must belong to the agent's user and not be group- or world-writable,
// since whoever may write there may replace the agent's sockets with their own.
import { chmodSync, chownSync, lstatSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname } from 'node:path';

/** The longest path a Unix socket address holds on Linux (sun_path, less the terminating NUL). */
export const MAX_SOCKET_PATH = 107;

/** The mode every agent socket has: its user and group may connect. */
export const SOCKET_MODE = 0o660;

export class SocketError extends Error {}

/**
 * A workload's Unix user (`--workload …,user=USER`): its socket directory and sockets are given to
 * it, so that user alone (and root) may connect. Node cannot read a connection's peer credentials
 * (there is no SO_PEERCRED in its API), so the kernel's permission check on connect() is the check.
 */
export interface SocketOwner {
  readonly user: string;
  readonly uid: number;
  /** Its primary group (the sockets' group stays the agent's, which binds and removes them). */
  readonly gid: number;
}

/** Makes `path` ready to bind: its directory exists and is the agent's own, nothing live is on it. */
export async function prepareSocket(path: string, owner?: SocketOwner): Promise<void> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH)
    throw new SocketError(
      `${path}: a Unix socket path is at most ${MAX_SOCKET_PATH} bytes (this one is ${Buffer.byteLength(path)}); choose a shorter one`,
    );
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  if (owner) checkOwnedSocketDir(dir, owner);
  else checkSocketDir(dir);
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

/** The agent's group: a workload's directory is shared with it (the agent binds and removes its sockets there). */
function agentGid(): number {
  return process.getgid?.() ?? 0;
}

/** An owned workload directory as the agent left it (or a fresh one): nobody else may write there. */
export function checkOwnedSocketDir(dir: string, owner: SocketOwner): void {
  const st = statSync(dir);
  if (!st.isDirectory()) throw new SocketError(`${dir} is not a directory`);
  const uid = process.getuid?.();
  if (st.uid !== owner.uid && st.uid !== uid)
    throw new SocketError(
      `${dir} belongs to uid ${st.uid}, neither to ${owner.user} (uid ${owner.uid}) nor to the agent's user: its sockets could be replaced by another user`,
    );
  if ((st.mode & 0o002) !== 0 || ((st.mode & 0o020) !== 0 && st.gid !== agentGid()))
    throw new SocketError(
      `${dir} is writable by others (mode ${(st.mode & 0o777).toString(8)}, group ${st.gid}): its sockets could be replaced; remove it and let the agent make it`,
    );
}

/** Directory and socket modes once given to a workload's user: the user and the agent's group, nobody else. */
export const OWNED_DIR_MODE = 0o770;
export const OWNED_SOCKET_MODE = 0o600;

/**
 * Gives a workload's bound sockets and their directory to its user: the sockets 0600 (only that user
 * may connect), the directory 0770 with the agent's group (the agent still removes and rebinds its
 * sockets). The run directory above must let the user pass (a search bit for others, 0751).
 * Changing a file's owner needs root or CAP_CHOWN: without, a clear error.
 */
export function giveToOwner(dir: string, sockets: readonly string[], owner: SocketOwner): void {
  const gid = agentGid();
  try {
    for (const s of sockets) {
      chownSync(s, owner.uid, gid);
      chmodSync(s, OWNED_SOCKET_MODE);
    }
    chownSync(dir, owner.uid, gid);
    chmodSync(dir, OWNED_DIR_MODE);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new SocketError(
      `user=${owner.user}: cannot give ${dir} to ${owner.user} (${code}): the agent must run as root or with CAP_CHOWN to hand a workload its own sockets`,
    );
  }
  const parent = dirname(dir);
  const st = statSync(parent);
  if ((st.mode & 0o001) === 0 && st.uid === process.getuid?.()) chmodSync(parent, (st.mode & 0o777) | 0o001);
}

/**
 * What the agent re-checks as an owned workload's local stream opens: that the directory and the
 * socket still let only the owner in. It cannot tell who connected (no peer credentials in Node);
 * it can refuse to serve once the permissions that decided it no longer hold (someone chmodded them).
 */
export function ownedSocketProblem(dir: string, socket: string, owner: SocketOwner): string | undefined {
  try {
    const d = statSync(dir);
    const s = statSync(socket);
    if (d.uid !== owner.uid || (d.mode & 0o007) !== 0)
      return `${dir} no longer belongs to ${owner.user} alone (uid ${d.uid}, mode ${(d.mode & 0o777).toString(8)})`;
    if (s.uid !== owner.uid || (s.mode & 0o077) !== 0)
      return `${socket} no longer belongs to ${owner.user} alone (uid ${s.uid}, mode ${(s.mode & 0o777).toString(8)})`;
  } catch (err) {
    return `${socket}: ${(err as Error).message}`;
  }
  return undefined;
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
