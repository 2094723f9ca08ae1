// Bounded history tables: every PRUNE_EVERY inserts, rows older than the newest `limit` are deleted.
// Pruning in batches keeps the per-insert cost at one INSERT.
import type Database from 'better-sqlite3';
import { prepared } from './prepared.js';

const PRUNE_EVERY = 100;

export class Retention {
  private inserts = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly tables: readonly string[],
    private readonly limit: number,
  ) {}

  /** Call after each insert, inside its transaction. */
  inserted(): void {
    if (++this.inserts % PRUNE_EVERY !== 0) return;
    for (const table of this.tables) {
      prepared<[number]>(this.db, `DELETE FROM ${table} WHERE id <= (SELECT MAX(id) FROM ${table}) - ?`).run(
        this.limit,
      );
    }
  }
}
