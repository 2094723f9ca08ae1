// Writes that may wait a moment — history rows, registry snapshot saves — committed together: the
// ones deferred within a window go out in one transaction at `synchronous = NORMAL`
// (relaxed-sync.ts), off the path of the change that made them, so that steady edits cost one commit
// per window rather than one per edit. A registry's snapshot save, when its own debounce ends, takes
// every row waiting with it (`flush(extra)`); the window is a little longer than that debounce, so
// under steady edits the rows ride with the save instead of paying for a commit of their own (a commit
// per edit cost about 0.5 ms of CPU per edit at 5 edits a second: docs/benchmarks.md). A crash loses
// at most the last window's writes and leaves the database consistent.
import type Database from 'better-sqlite3';
import { withoutSync } from './relaxed-sync.js';
import type { GuardWrite } from './snapshots.js';

/** How long a deferred write waits at most: past RegistryPersistence's default 500 ms debounce. */
export const WRITE_WINDOW_MS = 600;

/** A storm of changes must not hold writes in memory without bound. */
const MAX_PENDING = 10_000;

export interface DeferredWrite {
  /** What it writes, for the log line of a failed commit. */
  readonly what: string;
  /** Runs inside the window's transaction. */
  readonly write: () => void;
  /** The window's transaction failed (rolled back, logged): what `write` did is not stored. */
  readonly failed?: () => void;
}

export class WriteBehind {
  private pending: DeferredWrite[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** One transaction over a window's writes, made once: better-sqlite3 builds its wrappers per call. */
  private readonly commit: (writes: readonly DeferredWrite[]) => void;

  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
    private readonly windowMs = WRITE_WINDOW_MS,
  ) {
    this.commit = db.transaction((writes: readonly DeferredWrite[]) => {
      for (const w of writes) w.write();
    });
  }

  defer(write: DeferredWrite): void {
    this.pending.push(write);
    if (this.pending.length >= MAX_PENDING) return this.flush();
    this.timer ??= setTimeout(() => this.flush(), this.windowMs).unref();
  }

  /**
   * Commits every pending write now, and `extra` after them, in one transaction (a snapshot save
   * that is due; a read that must see the rows; close). A failed commit is logged by the guard.
   */
  flush(extra?: DeferredWrite): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const writes = this.pending;
    this.pending = [];
    if (extra) writes.push(extra);
    if (writes.length === 0) return;
    const what = writes.length === 1 ? (writes[0]?.what ?? 'write') : `${writes.length} deferred writes`;
    const committed = this.guard(what, () => {
      withoutSync(this.db, () => this.commit(writes));
      return true;
    });
    if (!committed) for (const w of writes) w.failed?.();
  }
}
