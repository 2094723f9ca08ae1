// The config loads every replica shares (migration 8): per config file path, what one text of it
// (by hash) loaded to with one build. Read once at a start (config-load-mirror.ts), written behind.
import type { SharedConfigLoad } from '../shared-store.js';
import type { PgDb } from './pg-db.js';

export class PgConfigLoads {
  constructor(private readonly db: PgDb) {}

  /** The rows of `format`, by path: at most `limit` of them (the first by path). */
  async all(format: string, limit: number): Promise<Map<string, SharedConfigLoad>> {
    const res = await this.db.pool.query<{ path: string; content_hash: string; load: string }>(
      'SELECT path, content_hash, load FROM config_loads WHERE format = $1 ORDER BY path LIMIT $2',
      [format, limit],
    );
    return new Map(
      res.rows.map((r) => [r.path, { path: r.path, contentHash: r.content_hash, format, load: r.load }]),
    );
  }

  /** Upserts `rows` (last writer wins per path) and deletes `removed`, in one transaction. */
  async write(rows: readonly SharedConfigLoad[], removed: readonly string[]): Promise<void> {
    await this.db.transaction(async (client) => {
      // A start writes thousands of rows: a statement per chunk, its rows as one JSON parameter
      // (node-postgres escapes a text[] parameter element by element, in JavaScript).
      for (let i = 0; i < rows.length; i += CHUNK)
        await client.query(
          `INSERT INTO config_loads (path, content_hash, format, load, replica)
             SELECT r.path, r.hash, r.format, r.load, $2
               FROM json_to_recordset($1::json) AS r (path text, hash text, format text, load text)
           ON CONFLICT (path) DO UPDATE SET content_hash = excluded.content_hash, format = excluded.format,
             load = excluded.load, replica = excluded.replica`,
          [
            JSON.stringify(
              rows
                .slice(i, i + CHUNK)
                .map((r) => ({ path: r.path, hash: r.contentHash, format: r.format, load: r.load })),
            ),
            this.db.replica,
          ],
        );
      if (removed.length > 0)
        await client.query('DELETE FROM config_loads WHERE path = ANY($1::text[])', [removed]);
    });
  }
}

/** Rows per statement: about 2 MB of loads at 10 endpoints a file. */
const CHUNK = 1000;
