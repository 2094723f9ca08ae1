// The shared history in PostgreSQL: every replica's rows in one table, tagged with the replica, of
// which the newest `limit` are kept. Written by history-mirror.ts.
import type { HistoryEntry } from '../history.js';
import type { PgDb } from './pg-db.js';

export class PgHistory {
  constructor(private readonly db: PgDb) {}

  /** Appends rows in one transaction, then keeps the newest `limit`. */
  async insert(rows: readonly HistoryEntry[], limit: number): Promise<void> {
    await this.db.transaction(async (client) => {
      for (const r of rows)
        await client.query(
          'INSERT INTO history (at, source, subject, event, detail, replica, generation) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [r.at, r.source, r.subject, r.event, r.detail, r.replica, r.generation ?? null],
        );
      await client.query(
        'DELETE FROM history WHERE id <= (SELECT id FROM history ORDER BY id DESC OFFSET $1 LIMIT 1)',
        [limit],
      );
    });
  }

  /** Every replica's newest rows, newest first. */
  async recent(limit: number): Promise<HistoryEntry[]> {
    const res = await this.db.pool.query<Omit<HistoryEntry, 'generation'> & { generation: string | null }>(
      'SELECT at, source, subject, event, detail, replica, generation FROM history ORDER BY at DESC, id DESC LIMIT $1',
      [limit],
    );
    // BIGINT comes back as text.
    return res.rows.map((r) => ({ ...r, generation: r.generation === null ? null : Number(r.generation) }));
  }
}
