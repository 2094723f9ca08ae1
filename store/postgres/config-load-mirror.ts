// --store: the config loads shared through PostgreSQL (migration 8), beside this replica's own
// (store/config-loads.ts). Read once before the config directory starts, so a replica with an empty
// --data-dir takes a file whose exact text another replica loaded with the same build without a
// parse (AcceptedFiles.loadOf: a cache, never a version in force: a file's last accepted version
// stays this replica's own). Every load this replica records is written behind to PostgreSQL too:
// rows gathered over a window go in one transaction, never on a file step's path, and those of the
// initial load only once it is over (started()), not in the start's own CPU; while the database is
// down they wait, at most MAX_KEPT paths (beyond that, a path costs a parse at another replica's
// start, nothing more).
import type { Logger } from '../../log/logger.js';
import type { AcceptedFile, AcceptedFiles } from '../../model/accepted-files.js';
import { contentHash } from '../config-loads.js';
import type { SharedConfigLoad, SharedConfigLoads } from '../shared-store.js';
import { WRITE_WINDOW_MS } from '../write-behind.js';

/** Paths whose write waits while the database is unreachable. */
export const MAX_KEPT = 20_000;
/** Rows read at a start: a config directory holds at most this many files worth sharing. */
export const MAX_SHARED_LOADS = 50_000;
/** A failed write is retried after this long. */
const RETRY_MS = 2000;

export class SharedConfigLoadFiles implements AcceptedFiles {
  /** The shared rows of this build, by path, as read at start; dropped (but their hashes) after it. */
  private loads: Map<string, SharedConfigLoad>;
  /** The hash the shared store holds for each path, as far as this replica knows: no rewrite of it. */
  private readonly sharedHash = new Map<string, string>();
  /** Per path, the row to write, or null to delete it; in the order recorded. */
  private pending = new Map<string, SharedConfigLoad | null>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private stopped = false;
  /** The initial load is over: writes may go. */
  private afterStart = false;
  /** Paths not written because the database was down too long. */
  dropped = 0;

  constructor(
    private readonly local: AcceptedFiles,
    private readonly shared: SharedConfigLoads,
    private readonly format: string,
    loads: ReadonlyMap<string, SharedConfigLoad>,
    private readonly logger: Logger,
  ) {
    this.loads = new Map(loads);
    for (const [path, row] of loads) this.sharedHash.set(path, row.contentHash);
  }

  /** Reads the shared rows of `format` (bounded); none if the database does not answer (logged). */
  static async open(
    local: AcceptedFiles,
    shared: SharedConfigLoads,
    format: string,
    logger: Logger,
  ): Promise<SharedConfigLoadFiles> {
    let loads = new Map<string, SharedConfigLoad>();
    try {
      loads = await shared.configLoads(format, MAX_SHARED_LOADS);
    } catch (err) {
      logger.warn({ err }, 'shared config loads unreadable; files not stored here are parsed');
    }
    return new SharedConfigLoadFiles(local, shared, format, loads, logger);
  }

  all(format: string): ReadonlyMap<string, AcceptedFile> | undefined {
    return this.local.all(format);
  }

  loadOf(path: string, text: string, format: string): string | undefined {
    const row = this.loads.get(path);
    if (format !== this.format || row === undefined || row.contentHash !== contentHash(text))
      return undefined;
    // Kept here too, so a restart of this replica finds it without the shared store.
    this.local.recordLoad(path, text, format, row.load);
    return row.load;
  }

  recordLoad(path: string, text: string, format: string, load: string): void {
    this.local.recordLoad(path, text, format, load);
    const hash = contentHash(text);
    if (this.sharedHash.get(path) === hash && format === this.format) return;
    this.sharedHash.set(path, hash);
    this.queue(path, { path, contentHash: hash, format, load });
  }

  removeLoad(path: string): void {
    this.local.removeLoad(path);
    this.loads.delete(path);
    this.sharedHash.delete(path);
    this.queue(path, null);
  }

  /** The start is over: the shared rows read for it are not needed any more. */
  started(): void {
    this.loads = new Map();
    this.afterStart = true;
    if (this.pending.size > 0) this.schedule(WRITE_WINDOW_MS);
  }

  /** Writes what is waiting now (tests, shutdown); resolves when tried. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    await this.write();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private queue(path: string, row: SharedConfigLoad | null): void {
    if (this.stopped) return;
    this.pending.delete(path); // to the end: the newest last
    this.pending.set(path, row);
    this.bound();
    this.schedule(WRITE_WINDOW_MS);
  }

  private bound(): void {
    for (const path of this.pending.keys()) {
      if (this.pending.size <= MAX_KEPT) return;
      this.pending.delete(path);
      this.sharedHash.delete(path);
      this.dropped++;
    }
  }

  private schedule(ms: number): void {
    if (this.stopped || !this.afterStart) return;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.write();
    }, ms).unref();
  }

  private async write(): Promise<void> {
    if (this.writing || this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const rows = [...batch.values()].filter((r): r is SharedConfigLoad => r !== null);
    const removed = [...batch].filter(([, r]) => r === null).map(([path]) => path);
    this.writing = this.shared.writeConfigLoads(rows, removed).then(
      () => undefined,
      (err: unknown) => {
        // Back in front of what was recorded meanwhile (a newer entry for a path wins), within the bound.
        for (const [path, row] of this.pending) batch.set(path, row);
        this.pending = batch;
        this.bound();
        this.logger.warn(
          { err, waiting: this.pending.size },
          'could not write config loads to the shared store; will retry',
        );
        this.schedule(RETRY_MS);
      },
    );
    await this.writing;
    this.writing = undefined;
    if (this.pending.size > 0) this.schedule(WRITE_WINDOW_MS);
  }
}
