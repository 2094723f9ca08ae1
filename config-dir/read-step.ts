// One file step's reads: every path of a watcher batch read and taken into the records, in path
// order, and the one place a save caught half-way is handled. A file that defined something and is
// found empty is far more often an in-place save caught between its truncate and its write than an
// intent to drop it all (deleting the file is the way to remove what it defined):
//
// - read again at once, a few times, yielding (REREAD_EMPTIED_MS): the write follows its truncate
//   at once unless the writer lost its CPU in between, which on a busy machine lasts milliseconds.
//   (The read again a quiet period later, below, falls in step with a writer that saves as often:
//   a save every 50 ms had a fifth of the reads land in that gap, and files went unread for up to
//   650 ms, in bench churn (a).) The waits are per batch, not per file;
// - still empty, it changes nothing and is read again after the quiet period, so a save's write,
//   whose event follows its truncate, is taken without an error in between;
// - still empty then, and not written since the empty read (a file saved in place as often as the
//   quiet period can be caught half-way again: each of its saves is a write seen since), it is
//   rejected, and its last good version stays in force.
import { join, relative, sep } from 'node:path';
import type { FileChange, FileRecords } from './file-records.js';
import { comparePaths } from './merge.js';
import { ConfigFileReader, type FileRead, type ReadFs, type ReadLimits } from './read-file.js';

/**
 * Waits before each read again of files found emptied, ms: 21 ms in all, well under the quiet
 * period, and far over the milliseconds a writer on a busy machine takes between them.
 */
export const REREAD_EMPTIED_MS = [1, 4, 16];

/**
 * Reads of a batch in flight at once, ahead of the one being taken. A first read of a file goes
 * through libuv's thread pool (four round trips: open, fstat, read, close); one at a time, the
 * initial load of 10,000 files spent 5.6 s waiting on them, 8 at a time 0.6 s (docs/benchmarks.md).
 * Each read keeps its own deadline, and at most this many texts wait to be taken.
 */
export const READ_AHEAD = 8;

/** What the step asks of the directory's watcher. */
export interface StepWatch {
  /** A number that moves on with every event reported for `path`: was it written since? */
  writesSeen(path: string): number;
  /** Reads `path` again after the quiet period, as if it had changed. */
  readAgain(path: string): void;
  /** The device `path` is known to be on (a regular file in its listed directory), if any. */
  deviceOf?(path: string): number | undefined;
}

export class ReadStep {
  /**
   * Files found emptied and being read again before that counts: the watcher's writesSeen then.
   * Bounded by the files.
   */
  private readonly emptyOnce = new Map<string, number>();

  private readonly reader: ConfigFileReader;

  constructor(
    private readonly dir: string,
    private readonly records: FileRecords,
    private readonly watch: StepWatch,
    /** Resolves after `ms` (a test's clock may resolve at once). */
    private readonly wait: (ms: number) => Promise<void>,
    limits: ReadLimits,
    fs?: ReadFs,
  ) {
    // A read that timed out has returned at last: the file is read again, in a step of its own.
    this.reader = new ConfigFileReader(limits, fs, (absolute) =>
      this.watch.readAgain(relative(this.dir, absolute).split(sep).join('/')),
    );
  }

  /** Reads `paths` and takes each read; returns the files whose record changed, by path. */
  async read(paths: Iterable<string>): Promise<FileChange[]> {
    const changes: FileChange[] = [];
    let emptied = await this.readAll([...paths].sort(comparePaths), changes);
    for (const ms of REREAD_EMPTIED_MS) {
      if (emptied.size === 0) break;
      await this.wait(ms);
      emptied = await this.readAll(emptied.keys(), changes);
    }
    for (const [path, read] of emptied) this.take(path, read, changes);
    return changes.sort((a, b) => comparePaths(a.path, b.path));
  }

  /** Reads `paths` and takes each read, except those that found a file emptied: returned. */
  private async readAll(paths: Iterable<string>, changes: FileChange[]): Promise<Map<string, FileRead>> {
    const emptied = new Map<string, FileRead>();
    const list = [...paths];
    const reads = new ReadAhead(list, (path) =>
      this.reader.read(join(this.dir, path), this.watch.deviceOf?.(path)),
    );
    for (const [i, path] of list.entries()) {
      const read = await reads.take(i);
      if (read.kind === 'text' && this.emptiedBy(path, read.text)) emptied.set(path, read);
      else this.take(path, read, changes);
    }
    return emptied;
  }

  /** Takes a read of `path` into the records, noting it in `changes` if that changed the file. */
  private take(path: string, read: FileRead, changes: FileChange[]): void {
    const emptied = read.kind === 'text' && this.emptiedBy(path, read.text);
    // Also when the save wrote back the same text, or the file went.
    if (!emptied) this.emptyOnce.delete(path);
    else if (read.kind === 'text' && !this.records.lastRead(path, read.text)) {
      const writes = this.watch.writesSeen(path);
      if (this.emptyOnce.get(path) !== writes) {
        this.emptyOnce.set(path, writes);
        this.watch.readAgain(path);
        return;
      }
      this.emptyOnce.delete(path);
    }
    const before = this.records.inForce(path);
    if (this.records.take(path, read, emptied)) changes.push({ path, before });
  }

  /** Whether `text` (empty, or only space) empties a file that defined something. */
  private emptiedBy(path: string, text: string): boolean {
    return text.trim() === '' && Boolean(this.records.inForce(path)?.resources.length);
  }
}

/**
 * Reads `paths` up to READ_AHEAD ahead of the one taken: take(i) in order, each once. A read that
 * throws is thrown by its take(), never left unhandled.
 */
class ReadAhead {
  private readonly pending = new Map<number, Promise<() => FileRead>>();
  private next = 0;

  constructor(
    private readonly paths: readonly string[],
    private readonly read: (path: string) => Promise<FileRead>,
  ) {}

  async take(i: number): Promise<FileRead> {
    while (this.next < Math.min(this.paths.length, i + READ_AHEAD)) {
      const path = this.paths[this.next] as string;
      this.pending.set(
        this.next++,
        this.read(path).then(
          (read) => () => read,
          (e: unknown) => () => {
            throw e;
          },
        ),
      );
    }
    const settled = this.pending.get(i);
    this.pending.delete(i);
    if (!settled) throw new Error(`read-ahead: read ${i} taken twice or out of order`);
    return (await settled)();
  }
}
