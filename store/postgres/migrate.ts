// Applying the PostgreSQL migrations (migrations.ts) at open: one transaction each, under a session
// advisory lock so that replicas starting at once apply each migration once (the others wait, then
// find them done). A database from a newer Portolan is refused, naming both versions.
import type pg from 'pg';

/** Advisory lock key (any constant 64-bit number, unique to Portolan's uses). */
const MIGRATION_LOCK = 0x706f72746f6c01n;

export async function readVersion(db: pg.Pool | pg.PoolClient): Promise<number> {
  const res = await db.query<{ version: number }>('SELECT version FROM portolan_schema');
  return res.rows[0]?.version ?? 0;
}

export async function migrate(
  pool: pg.Pool,
  migrations: readonly string[],
  target: number,
  known: number,
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
    try {
      await client.query(
        'CREATE TABLE IF NOT EXISTS portolan_schema (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)',
      );
      await client.query('INSERT INTO portolan_schema (version) VALUES (0) ON CONFLICT DO NOTHING');
      for (;;) {
        const current = await readVersion(client);
        if (current > known)
          throw new Error(
            `database schema version ${current} is newer than this Portolan understands (${known}); upgrade Portolan or use another database`,
          );
        if (current >= target) return;
        await client.query('BEGIN');
        try {
          await client.query(migrations[current] ?? '');
          await client.query('UPDATE portolan_schema SET version = $1', [current + 1]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}
