// The auto-registration table in PostgreSQL: one row per registered VM, owned by the replica that
// holds its agent's stream. The write-through and the poll that use it are auto-registrations.ts.
import { touched, type PgDb } from './pg-db.js';

export interface AutoRegistrationRow {
  readonly key: string;
  readonly value: string;
  readonly replica: string;
}

export class PgAutoRegistrationRows {
  constructor(private readonly db: PgDb) {}

  /** Writes an auto-registration held by this replica (it owns the row from now on). */
  async put(key: string, registration: string, now = new Date()): Promise<void> {
    await this.db.pool.query(
      `INSERT INTO auto_registrations (key, registration, replica, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (key) DO UPDATE SET registration = $2, replica = $3, updated_at = $4`,
      [key, registration, this.db.replica, now.toISOString()],
    );
  }

  /** Deletes an auto-registration if this replica still owns it (another may have taken it over). */
  async delete(key: string): Promise<void> {
    await this.db.pool.query('DELETE FROM auto_registrations WHERE key = $1 AND replica = $2', [
      key,
      this.db.replica,
    ]);
  }

  async list(): Promise<AutoRegistrationRow[]> {
    const res = await this.db.pool.query<AutoRegistrationRow>(
      'SELECT key, registration AS value, replica FROM auto_registrations ORDER BY key LIMIT 100000',
    );
    return res.rows;
  }

  /**
   * The leader's grace cleanup: the rows of replicas whose heartbeat is older than `graceMs` (dead,
   * so their own timers died with them), and rows older than their live owner's start (a previous
   * run's, which it no longer holds) once they are `graceMs` old. Returns how many went.
   */
  async expire(graceMs: number, now = new Date()): Promise<number> {
    const cutoff = new Date(now.getTime() - graceMs).toISOString();
    const res = await this.db.pool.query(
      `DELETE FROM auto_registrations a
       WHERE NOT EXISTS (
         SELECT 1 FROM replicas r
         WHERE r.replica = a.replica AND r.heartbeat_at >= $1 AND (a.updated_at >= r.started_at OR a.updated_at >= $1)
       )`,
      [cutoff],
    );
    return touched(res);
  }
}
