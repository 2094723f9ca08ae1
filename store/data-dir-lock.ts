// One owner per data directory. `portolan serve` holds an exclusive flock(2) on DATA_DIR/serve.lock
// for as long as it runs, and writes its pid and start time into the file. The kernel drops the lock
// when the process ends however it ends (exit, crash, SIGKILL), so a leftover file never blocks a
// restart and a reused pid is never taken for the owner — which an exclusive create plus a pid
// liveness check cannot promise. The file is never deleted: unlinking a lock file lets two processes
// lock two different files. Commands that only read, or write through SQLite transactions (`history`,
// `ca root`, `token`, `cert revoke`, `ca rotate`), do not take it. Needs a local filesystem (flock
// over NFS is not reliable).
import { closeSync, constants, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { flockSync } from 'fs-ext';

export const LOCK_FILE = 'serve.lock';

export class DataDirLockedError extends Error {
  constructor(
    readonly path: string,
    readonly holderPid: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

export interface DataDirLock {
  readonly path: string;
  release(): void;
}

interface Holder {
  readonly pid?: number;
  readonly host?: string;
  readonly since?: string;
}

/** Takes the data directory's lock at once, or throws DataDirLockedError naming the holder. */
export function lockDataDir(dataDir: string, now = new Date()): DataDirLock {
  const path = join(dataDir, LOCK_FILE);
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  try {
    flockSync(fd, 'exnb');
  } catch (err) {
    closeSync(fd);
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw err;
    const holder = readHolder(path);
    const who = holder.pid
      ? `portolan serve pid ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}${holder.since ? ` (since ${holder.since})` : ''}`
      : 'another portolan serve (starting: no pid written yet)';
    throw new DataDirLockedError(
      path,
      holder.pid,
      `data directory ${dataDir} is in use by ${who}: stop it first, or give this one another --data-dir`,
    );
  }
  const holder: Holder = { pid: process.pid, host: hostname(), since: now.toISOString() };
  ftruncateSync(fd, 0);
  writeSync(fd, `${JSON.stringify(holder)}\n`, 0);
  let held = true;
  return {
    path,
    release() {
      if (!held) return;
      held = false;
      ftruncateSync(fd, 0);
      closeSync(fd); // closing the last descriptor releases the flock
    },
  };
}

function readHolder(path: string): Holder {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Holder;
    return typeof parsed.pid === 'number' ? parsed : {};
  } catch {
    return {};
  }
}
