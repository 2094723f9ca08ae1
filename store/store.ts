// The one place that owns Portolan's SQLite database (`DATA_DIR/portolan.db`): opening it safely,
// migrating it, and guarding every write so that a full disk degrades to "serving from memory"
// instead of taking the control plane down.
import { chmodSync, existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Logger } from '../log/logger.js';
import { AutoRegistrationTable } from './auto-registrations.js';
import { CaMaterialTable } from './ca-material.js';
import { salvageCaState, restoreCaState, type CaState } from './ca-salvage.js';
import { EnrollmentTable } from './enrollments.js';
import { ConfigLoadTable } from './config-loads.js';
import { HistoryTables } from './history.js';
import { JoinTokenTable } from './join-tokens.js';
import { MIGRATIONS } from './migrations.js';
import { ProxyHistoryTable } from './proxy-history.js';
import { RevocationTable } from './revocations.js';
import { SnapshotTable } from './snapshots.js';
import { WriteBehind } from './write-behind.js';

export const DB_FILE = 'portolan.db';

/** How long opening waits out another process holding a new database busy (Store.openAt). */
const OPEN_BUSY_RETRY_MS = 10_000;

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** Opening is synchronous (better-sqlite3): its retry waits without returning to the event loop. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export class StoreError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
  }
}

export interface StoreOptions {
  readonly dataDir: string;
  readonly logger: Logger;
  /**
   * Move an unreadable database aside (`portolan.db.corrupt-TIMESTAMP`) and start a new one, carrying
   * over the CA's state (root keys, join tokens, enrollments, revocations) read from the damaged file.
   * When that state cannot be read, the reset is refused unless `resetCa`: a new database would mean a
   * new CA root, and every workload would have to enroll again.
   */
  readonly reset?: boolean;
  /** With `reset`: start anew even when the CA's state cannot be carried over (a new root). */
  readonly resetCa?: boolean;
  /** The replica writing (serve --replica-id): history rows are tagged with it. */
  readonly replica?: string;
  /** Rows kept per history table (config changes, registry events, proxy connections). */
  readonly historyLimit?: number;
  /** Open without writing (for `portolan history`): no migrations, no permission changes. */
  readonly readonly?: boolean;
  /** Tests only: cap the database at this many pages, to simulate a full disk. */
  readonly maxPageCount?: number;
  /** Tests only: apply at most this many migrations. */
  readonly migrateTo?: number;
  /** Called after a write failed (it was logged); for metrics. */
  readonly onWriteError?: () => void;
}

export class Store {
  readonly path: string;
  readonly snapshots: SnapshotTable;
  readonly history: HistoryTables;
  /** Writes that may wait, committed together (history rows, registry snapshot saves). */
  readonly writes: WriteBehind;
  /** What each accepted config file loaded to, for a restart (config-loads.ts). */
  readonly configLoads: ConfigLoadTable;
  readonly proxies: ProxyHistoryTable;
  readonly ca: CaMaterialTable;
  readonly joinTokens: JoinTokenTable;
  readonly enrollments: EnrollmentTable;
  readonly revocations: RevocationTable;
  readonly autoRegistrations: AutoRegistrationTable;
  writeErrors = 0;
  private readonly db: Database.Database;

  private constructor(
    db: Database.Database,
    path: string,
    private readonly options: StoreOptions,
  ) {
    this.db = db;
    this.path = path;
    const guard = <T>(what: string, fn: () => T): T | undefined => this.guardWrite(what, fn);
    const limit = options.historyLimit ?? 10_000;
    this.snapshots = new SnapshotTable(db, guard);
    this.writes = new WriteBehind(db, guard);
    this.history = new HistoryTables(db, guard, limit, options.replica ?? '', this.writes);
    this.configLoads = new ConfigLoadTable(db, this.writes, guard);
    this.proxies = new ProxyHistoryTable(db, guard, limit);
    this.ca = new CaMaterialTable(db, guard, limit);
    this.revocations = new RevocationTable(db, guard);
    this.joinTokens = new JoinTokenTable(db, guard, this.revocations);
    this.enrollments = new EnrollmentTable(db, guard);
    this.autoRegistrations = new AutoRegistrationTable(db, guard);
  }

  /** Opens (creating and migrating as needed) the store in `dataDir`; throws StoreError with the reason. */
  static open(options: StoreOptions): Store {
    const path = join(options.dataDir, DB_FILE);
    try {
      return Store.openAt(path, options);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      // A database another process holds busy is not damaged: never moved aside for that.
      if (!options.reset || options.readonly || !existsSync(path) || isBusy(err)) {
        const hint =
          options.readonly || !existsSync(path) ? '' : ' (--reset-store moves it aside and starts a new one)';
        throw new StoreError(path, reason + hint);
      }
      // Read the CA's state out of the damaged file first: if it cannot be read, nothing is moved.
      let caState: CaState | undefined;
      if (!options.resetCa) {
        try {
          caState = salvageCaState(path);
        } catch (salvageErr) {
          throw new StoreError(
            path,
            `${reason}; the CA's root keys, join tokens and enrollments in it cannot be read either ` +
              `(${(salvageErr as Error).message}). Restore the file from a backup, or give --reset-ca ` +
              'as well to start with a new CA root (every workload must then enroll again with a new join token)',
          );
        }
      }
      const aside = `${path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      for (const suffix of ['', '-wal', '-shm']) {
        if (existsSync(path + suffix)) renameSync(path + suffix, aside + suffix);
      }
      const store = Store.openAt(path, options);
      if (caState) restoreCaState(store.db, caState);
      options.logger.warn(
        {
          path,
          movedTo: aside,
          reason,
          ca: caState ? `carried over: ${describe(caState)}` : 'not carried over (--reset-ca): a new root',
        },
        '--reset-store: moved the unreadable database aside',
      );
      return store;
    }
  }

  /**
   * Opens the database at `path`, retrying for a while when another process holds it busy: two
   * processes opening a new database at once (`serve` and `ca root`) meet in its first steps, where
   * SQLite answers some lock waits with SQLITE_BUSY at once instead of waiting out the busy timeout
   * (seen as "database is locked" from one of two concurrent `ca root` on a loaded machine). Every
   * step is safe to repeat: the check reads, the pragmas are idempotent, each migration is a
   * transaction that reads the version under the write lock.
   */
  private static openAt(path: string, options: StoreOptions): Store {
    const deadline = Date.now() + OPEN_BUSY_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        return Store.openOnce(path, options);
      } catch (err) {
        if (!isBusy(err) || Date.now() >= deadline) throw err;
        sleepSync(Math.min(100, 10 * attempt));
      }
    }
  }

  private static openOnce(path: string, options: StoreOptions): Store {
    const db = new Database(path, {
      readonly: options.readonly ?? false,
      fileMustExist: options.readonly ?? false,
    });
    try {
      // Fail now, with SQLite's own words, on a file that is not a database or is damaged.
      const check = db.pragma('quick_check', { simple: true });
      if (check !== 'ok') throw new Error(`integrity check failed: ${String(check)}`);
      if (!options.readonly) {
        chmodSync(path, 0o600);
        db.pragma('journal_mode = WAL');
        // FULL: a synced snapshot survives power loss; writes are debounced, so the cost is small.
        db.pragma('synchronous = FULL');
        db.pragma('foreign_keys = ON');
        migrate(db, options.migrateTo ?? MIGRATIONS.length);
        if (options.maxPageCount) db.pragma(`max_page_count = ${options.maxPageCount}`);
        for (const suffix of ['-wal', '-shm']) if (existsSync(path + suffix)) chmodSync(path + suffix, 0o600);
      } else {
        const version = Number(db.pragma('user_version', { simple: true }));
        if (version > MIGRATIONS.length) throw new Error(newerMessage(version));
      }
      return new Store(db, path, options);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  schemaVersion(): number {
    return Number(this.db.pragma('user_version', { simple: true }));
  }

  close(): void {
    if (this.db.open && !this.options.readonly) this.writes.flush();
    if (this.db.open) this.db.close();
  }

  /** Runs a write; a failure (disk full, I/O error) is logged and counted, and serving goes on. */
  private guardWrite<T>(what: string, fn: () => T): T | undefined {
    if (this.options.readonly) return undefined;
    try {
      return fn();
    } catch (err) {
      this.writeErrors += 1;
      this.options.onWriteError?.();
      this.options.logger.error({ err, path: this.path, what }, 'store write failed; continuing from memory');
      return undefined;
    }
  }
}

/**
 * Applies the missing migrations, one transaction each. Each reads the version under the write lock
 * (BEGIN IMMEDIATE), so two processes opening a new store at once (`serve` and `ca root`) apply each
 * migration once: the second waits, then sees it done.
 */
function migrate(db: Database.Database, target: number): void {
  const step = db.transaction((): boolean => {
    const current = Number(db.pragma('user_version', { simple: true }));
    if (current > MIGRATIONS.length) throw new Error(newerMessage(current));
    if (current >= target) return false;
    db.exec(MIGRATIONS[current] ?? '');
    db.pragma(`user_version = ${current + 1}`);
    return true;
  });
  while (step.immediate()) {
    // next migration
  }
}

function describe(state: CaState): string {
  return Object.entries(state)
    .map(([table, rows]) => `${rows.length} ${table}`)
    .join(', ');
}

function newerMessage(version: number): string {
  return `database schema version ${version} is newer than this Portolan understands (${MIGRATIONS.length}); upgrade Portolan or use another --data-dir`;
}
