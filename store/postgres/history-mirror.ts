// The history in PostgreSQL (issue #20, docs/ha.md): every row a replica records (store/history.ts,
// tagged with its replica id) is also written here, behind: rows gathered over one window go in one
// transaction, never on the push path. While the database is down the rows wait in memory, at most
// MAX_KEPT of them; beyond that the oldest are dropped, counted and logged.
import type { Logger } from '../../log/logger.js';
import type { HistoryEntry, HistoryMirror } from '../history.js';
import { WRITE_WINDOW_MS } from '../history.js';
import type { PostgresStore } from './postgres-store.js';

/** Rows kept while the database is unreachable. */
export const MAX_KEPT = 10_000;
/** A failed write is retried after this long. */
const RETRY_MS = 2000;

export class PostgresHistoryMirror implements HistoryMirror {
  private rows: HistoryEntry[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private stopped = false;
  /** Rows dropped because the database was down too long (the oldest first). */
  dropped = 0;

  constructor(
    private readonly store: PostgresStore,
    private readonly limit: number,
    private readonly logger: Logger,
  ) {}

  record(entry: HistoryEntry): void {
    if (this.stopped) return;
    this.rows.push(entry);
    if (this.rows.length > MAX_KEPT) {
      const over = this.rows.length - MAX_KEPT;
      this.rows.splice(0, over);
      this.dropped += over;
      if (this.dropped === over || this.dropped % 1000 < over)
        this.logger.warn({ dropped: this.dropped }, 'shared store unreachable: oldest history rows dropped');
    }
    this.schedule(WRITE_WINDOW_MS);
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

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.write();
    }, ms).unref();
  }

  private async write(): Promise<void> {
    if (this.writing || this.rows.length === 0) return;
    const batch = this.rows;
    this.rows = [];
    this.writing = this.store.history.insert(batch, this.limit).then(
      () => undefined,
      (err: unknown) => {
        // Back in front of what was recorded meanwhile, within the bound.
        this.rows = [...batch, ...this.rows];
        const over = this.rows.length - MAX_KEPT;
        if (over > 0) {
          this.rows.splice(0, over);
          this.dropped += over;
        }
        this.logger.warn(
          { err, waiting: this.rows.length },
          'could not write history to the shared store; will retry',
        );
        this.schedule(RETRY_MS);
      },
    );
    await this.writing;
    this.writing = undefined;
    if (this.rows.length > 0) this.schedule(WRITE_WINDOW_MS);
  }
}
