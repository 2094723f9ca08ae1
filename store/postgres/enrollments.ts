// Enrollments in PostgreSQL (the SQLite side is store/enrollments.ts): the chains of certificates
// that descend from one join token. Revoking them is the deny list's job (revocations.ts).
import type { EnrollmentRow } from '../enrollments.js';
import { decodeEnrollment, type EnrollmentColumns } from '../row-codecs.js';
import type { NewEnrollment, SharedEnrollments } from '../shared-store.js';
import { touched, type PgDb } from './pg-db.js';

export class PgEnrollments implements SharedEnrollments {
  constructor(private readonly db: PgDb) {}

  async startEnrollment(e: NewEnrollment): Promise<void> {
    await this.db.pool.query(
      'INSERT INTO enrollments (id, identity, token_id, started_at) VALUES ($1, $2, $3, $4)',
      [e.id, e.identity, e.tokenId, e.startedAt],
    );
  }

  async getEnrollment(id: string): Promise<EnrollmentRow | undefined> {
    const res = await this.db.pool.query<EnrollmentColumns>('SELECT * FROM enrollments WHERE id = $1', [id]);
    const row = res.rows[0];
    return row && decodeEnrollment(row);
  }

  async removeEnrollment(id: string): Promise<void> {
    await this.db.pool.query('DELETE FROM enrollments WHERE id = $1', [id]);
  }

  async countEnrollmentsByToken(tokenId: string): Promise<number> {
    const res = await this.db.pool.query<{ n: string }>(
      'SELECT COUNT(*) AS n FROM enrollments WHERE token_id = $1',
      [tokenId],
    );
    return Number(res.rows[0]?.n ?? 0);
  }

  /** Forgets enrollments started before `before`; how many. */
  async pruneStartedBefore(before: Date): Promise<number> {
    return touched(
      await this.db.pool.query('DELETE FROM enrollments WHERE started_at < $1', [before.toISOString()]),
    );
  }
}
