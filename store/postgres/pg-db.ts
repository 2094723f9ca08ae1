// The connection every PostgreSQL table module shares: the pool, this replica's name (written into
// the rows it adds), the URL (for the connections of their own that LISTEN and leadership hold),
// and one way to run statements in a transaction.
import pg from 'pg';

export class PgDb {
  constructor(
    readonly pool: pg.Pool,
    readonly replica: string,
    readonly url: string,
  ) {}

  /** Runs `fn` between BEGIN and COMMIT on one pooled client; rolls back when it throws. */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}

/** The number of rows a statement touched. */
export const touched = (res: { rowCount: number | null }): number => res.rowCount ?? 0;
