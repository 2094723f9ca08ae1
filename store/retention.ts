// Bounded history tables: every PRUNE_EVERY inserts, rows older than the newest `limit` are deleted.
// Pruning in batches keeps the per-insert cost at one INSERT.
import type Database from 'better-sqlite3';

const PRUNE_EVERY = 100;

export class Retention {
  private inserts = 0;
  // Prepared on the first prune and kept: a connect storm prunes every 100 rows.
  private prunes: Database.Statement<[number]>[] | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly tables: readonly string[],
    private readonly limit: number,
  ) {}

  /** Call after each insert, inside its transaction. */
  inserted(): void {
    if (++this.inserts % PRUNE_EVERY !== 0) return;
    this.prunes ??= this.tables.map((table) =>
      this.db.prepare<[number]>(`DELETE FROM ${table} WHERE id <= (SELECT MAX(id) FROM ${table}) - ?`),
    );
    for (const prune of this.prunes) prune.run(this.limit);
  }
}
