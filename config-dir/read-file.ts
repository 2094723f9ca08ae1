// Reading one config file with bounds: only regular files (a symlink to one is fine, as a ConfigMap
// volume's `echo.yaml -> ..data/echo.yaml` is), at most `maxBytes`, within `timeoutMs`.
//
// The file is opened with O_NONBLOCK, so opening a FIFO or a device returns at once (a plain open of
// a FIFO waits for a writer, forever), and its type is checked on the open descriptor, so a file
// swapped between check and read cannot slip through. A read that does not finish in time (a hung
// network filesystem) is reported as an error; the stuck system call keeps one libuv thread until it
// returns, so a path whose read is still stuck is not read again until it has (at most one stuck
// thread per path).
//
// A file whose last read found it on a local filesystem (local-filesystems.ts) is read synchronously
// instead: the same calls and checks, without four round trips through the thread pool, which on an
// otherwise idle server cost more than the rest of a one-file edit's read.
import {
  close,
  closeSync,
  constants,
  fstat,
  fstatSync,
  open,
  openSync,
  read,
  readSync,
  type Stats,
} from 'node:fs';
import { promisify } from 'node:util';
import { LocalFilesystems } from './local-filesystems.js';

export interface ReadLimits {
  readonly maxBytes: number;
  readonly timeoutMs: number;
}

/** 10 MiB: far above any hand-written config, small enough to parse without stalling the server. */
export const MAX_CONFIG_FILE_BYTES = 10 * 1024 * 1024;
export const CONFIG_READ_TIMEOUT_MS = 5000;
export const DEFAULT_READ_LIMITS: ReadLimits = {
  maxBytes: MAX_CONFIG_FILE_BYTES,
  timeoutMs: CONFIG_READ_TIMEOUT_MS,
};

export type FileRead =
  | { readonly kind: 'text'; readonly text: string }
  /** Missing, or no longer a file (a directory now, or a parent that stopped being one). */
  | { readonly kind: 'gone' }
  | { readonly kind: 'error'; readonly message: string };

/** An open file, as a read uses it (a `FileHandle` from node:fs/promises is one). */
export interface OpenFile {
  stat(): Promise<Stats>;
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  close(): Promise<void>;
}

/** The file system calls a read needs; tests replace them to simulate a read that hangs. */
export interface ReadFs {
  open(path: string): Promise<OpenFile>;
}

// Node's callback calls on a bare descriptor: a `FileHandle` (node:fs/promises) costs more per call
// on the event loop, and a one-file edit reads its file twice (the read, and the recheck after it).
const openFd = promisify(open);
const fstatFd = promisify(fstat);
const readFd = promisify(read);
const closeFd = promisify(close);

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

const NODE_FS: ReadFs = {
  open: async (path) => {
    const fd = await openFd(path, OPEN_FLAGS);
    return {
      stat: () => fstatFd(fd),
      read: (buffer, offset, length, position) => readFd(fd, buffer, offset, length, position),
      close: () => closeFd(fd),
    };
  },
};

/** A read's outcome, and the device the file was found on (to choose how to read it next time). */
interface Outcome {
  readonly read: FileRead;
  readonly dev?: number;
}

export class ConfigFileReader {
  /** Paths whose last read timed out and has not returned yet. */
  private readonly stuck = new Set<string>();
  /** Path → the device its last read found it on; only kept while reading through `NODE_FS`. */
  private readonly devices = new Map<string, number>();
  private readonly local = new LocalFilesystems();

  /** `returned` is called with a path whose timed-out read has finished at last: read it again. */
  constructor(
    private readonly limits: ReadLimits = DEFAULT_READ_LIMITS,
    private readonly fs: ReadFs = NODE_FS,
    private readonly returned: (path: string) => void = () => {},
  ) {}

  /** `device`: where the caller knows the file to be, for a first read (its directory's device). */
  async read(path: string, device?: number): Promise<FileRead> {
    if (this.stuck.has(path)) return this.timedOut();
    if (this.fs === NODE_FS) {
      const dev = this.devices.get(path) ?? device;
      if (dev !== undefined && this.local.isLocal(dev))
        return this.remember(path, readNow(path, this.limits.maxBytes));
    }
    const reading = readBounded(this.fs, path, this.limits.maxBytes);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.limits.timeoutMs);
    });
    const result = await Promise.race([reading, timedOut]);
    clearTimeout(timer);
    if (result !== 'timeout') return this.fs === NODE_FS ? this.remember(path, result) : result.read;
    this.stuck.add(path);
    void reading.finally(() => {
      this.stuck.delete(path);
      this.returned(path);
    });
    return this.timedOut();
  }

  private remember(path: string, outcome: Outcome): FileRead {
    if (outcome.dev === undefined) this.devices.delete(path);
    else this.devices.set(path, outcome.dev);
    return outcome.read;
  }

  private timedOut(): FileRead {
    return { kind: 'error', message: `read did not finish within ${this.limits.timeoutMs} ms` };
  }
}

async function readBounded(fs: ReadFs, path: string, maxBytes: number): Promise<Outcome> {
  let handle: Awaited<ReturnType<ReadFs['open']>> | undefined;
  try {
    handle = await fs.open(path);
    const info = await handle.stat();
    const refused = refuse(info, maxBytes);
    if (refused) return { read: refused, dev: info.dev };
    // Few, large chunks: each read is a round trip through the thread pool.
    const text = new BoundedText(info, maxBytes, 64 * 1024);
    for (;;) {
      const chunk = text.nextChunk();
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, text.position);
      const done = text.took(chunk, bytesRead);
      if (done) return done;
    }
  } catch (e) {
    return { read: failed(e) };
  } finally {
    await handle?.close().catch(() => {});
  }
}

/** readBounded's calls and checks, made synchronously: only for a file on a local filesystem. */
function readNow(path: string, maxBytes: number): Outcome {
  let fd: number | undefined;
  try {
    fd = openSync(path, OPEN_FLAGS);
    const info = fstatSync(fd);
    const refused = refuse(info, maxBytes);
    if (refused) return { read: refused, dev: info.dev };
    // Chunks sized to the file: a small one comes from Buffer's shared pool.
    const text = new BoundedText(info, maxBytes, 4096);
    for (;;) {
      const chunk = text.nextChunk();
      const done = text.took(chunk, readSync(fd, chunk, 0, chunk.length, text.position));
      if (done) return done;
    }
  } catch (e) {
    return { read: failed(e) };
  } finally {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // closing a descriptor we opened cannot fail in a way worth reporting
      }
    }
  }
}

/**
 * A regular file's text, gathered chunk by chunk. The size can change under us: read until the
 * end, and stop one byte past the cap. A read that fills less than asked of a regular file has met
 * its end: no second read to see 0.
 */
class BoundedText {
  private readonly chunks: Buffer[] = [];
  /** Bytes gathered so far: where the next read starts. */
  position = 0;

  constructor(
    private readonly info: Stats,
    private readonly maxBytes: number,
    private readonly minChunk: number,
  ) {}

  nextChunk(): Buffer {
    const wanted = Math.max(this.info.size + 1, this.minChunk);
    return Buffer.allocUnsafe(Math.min(wanted, this.maxBytes + 1 - this.position));
  }

  /** Takes `bytesRead` bytes read into `chunk`: the outcome once the read is over, else undefined. */
  took(chunk: Buffer, bytesRead: number): Outcome | undefined {
    const dev = this.info.dev;
    if (bytesRead > 0) {
      this.chunks.push(chunk.subarray(0, bytesRead));
      this.position += bytesRead;
      if (this.position > this.maxBytes) return { read: tooLarge(this.position, this.maxBytes), dev };
      if (bytesRead === chunk.length) return undefined;
    }
    return { read: { kind: 'text', text: Buffer.concat(this.chunks, this.position).toString('utf8') }, dev };
  }
}

/** Why a path opened as `info` is not read: not a file, or too large. */
function refuse(info: Stats, maxBytes: number): FileRead | undefined {
  if (info.isDirectory()) return { kind: 'gone' };
  if (!info.isFile()) {
    return {
      kind: 'error',
      message: `not a regular file (${typeName(info)}); only regular files, or symlinks to them, are loaded`,
    };
  }
  if (info.size > maxBytes) return tooLarge(info.size, maxBytes);
  return undefined;
}

function failed(e: unknown): FileRead {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') return { kind: 'gone' };
  return { kind: 'error', message: `cannot read: ${e instanceof Error ? e.message : String(e)}` };
}

function tooLarge(size: number, maxBytes: number): FileRead {
  return {
    kind: 'error',
    message: `larger than ${formatBytes(maxBytes)} (${size} bytes); not loaded`,
  };
}

function formatBytes(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`;
}

function typeName(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  return 'not a file';
}
