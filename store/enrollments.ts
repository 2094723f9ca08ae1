// Enrollments: the chain of certificates that descends from one join token. The first certificate
// issued with a token starts one; each renewal with a certificate of the chain continues it. A row
// says who it is for, which token started it, when (renewals stop at a maximum age), and whether it
// was revoked (`portolan token revoke`, `portolan cert revoke`; store/revocations.ts writes that).
import type Database from 'better-sqlite3';
import type { GuardWrite } from './snapshots.js';
import { decodeEnrollment, type EnrollmentColumns } from './row-codecs.js';

export interface EnrollmentRow {
  readonly id: string;
  readonly identity: string;
  /** The join token that started it; null when adopted from a certificate issued before enrollments. */
  readonly tokenId: string | null;
  readonly startedAt: string;
  readonly revokedAt: string | null;
  readonly revokedReason: string | null;
}

export class EnrollmentTable {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
  ) {}

  /** Records a new enrollment; false when the write failed (it was logged). */
  start(e: { id: string; identity: string; tokenId: string | null; startedAt: string }): boolean {
    return (
      this.guard(`enrollment ${e.id}`, () => {
        this.db
          .prepare('INSERT INTO enrollments (id, identity, token_id, started_at) VALUES (?, ?, ?, ?)')
          .run(e.id, e.identity, e.tokenId, e.startedAt);
        return true;
      }) ?? false
    );
  }

  get(id: string): EnrollmentRow | undefined {
    const r = this.db.prepare<[string], EnrollmentColumns>('SELECT * FROM enrollments WHERE id = ?').get(id);
    return r && decodeEnrollment(r);
  }

  /** Forgets an enrollment whose first certificate was not issued after all. */
  remove(id: string): void {
    this.guard(`enrollment ${id}`, () => this.db.prepare('DELETE FROM enrollments WHERE id = ?').run(id));
  }

  /** How many enrollments a join token started (for `portolan token revoke`'s message). */
  countByToken(tokenId: string): number {
    return (
      this.db
        .prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM enrollments WHERE token_id = ?')
        .get(tokenId)?.n ?? 0
    );
  }

  /** Deletes enrollments started before `cutoff` (their certificates have all expired); returns how many. */
  pruneStartedBefore(cutoff: Date): number {
    return (
      this.guard('enrollment pruning', () => {
        return this.db.prepare('DELETE FROM enrollments WHERE started_at < ?').run(cutoff.toISOString())
          .changes;
      }) ?? 0
    );
  }

  list(limit = 1000): EnrollmentRow[] {
    return this.db
      .prepare<[number], EnrollmentColumns>('SELECT * FROM enrollments ORDER BY started_at DESC LIMIT ?')
      .all(limit)
      .map(decodeEnrollment);
  }
}
