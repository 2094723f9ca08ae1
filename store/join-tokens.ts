// The CA's join tokens: only a hash of each token is kept. Using a token decrements its uses in one
// statement, so two concurrent first contacts cannot both spend a one-time token.
import type Database from 'better-sqlite3';
import type { RevocationTable } from './revocations.js';
import type { GuardWrite } from './snapshots.js';

export interface JoinTokenRow {
  readonly id: string;
  readonly identity: string;
  readonly expiresAt: string;
  readonly usesLeft: number;
  readonly revokedAt: string | null;
  readonly createdAt: string;
}

interface Row {
  id: string;
  identity: string;
  expires_at: string;
  uses_left: number;
  revoked_at: string | null;
  created_at: string;
}

const toRow = (r: Row): JoinTokenRow => ({
  id: r.id,
  identity: r.identity,
  expiresAt: r.expires_at,
  usesLeft: r.uses_left,
  revokedAt: r.revoked_at,
  createdAt: r.created_at,
});

export class JoinTokenTable {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
    private readonly revocations: RevocationTable,
  ) {}

  insert(t: { id: string; hash: string; identity: string; expiresAt: string; uses: number }): boolean {
    return (
      this.guard(`join token ${t.id}`, () => {
        this.db
          .prepare(
            `INSERT INTO join_tokens (id, hash, identity, expires_at, uses_left, created_at)
             VALUES (?, ?, ?, ?, ?, ?)`,
          )
          .run(t.id, t.hash, t.identity, t.expiresAt, t.uses, new Date().toISOString());
        return true;
      }) ?? false
    );
  }

  /** Spends one use of a live token; returns its identity, or undefined when it cannot be used. */
  consume(hash: string, now: Date): string | undefined {
    return this.guard(
      'join token use',
      () =>
        this.db
          .prepare<[string, string], { identity: string }>(
            `UPDATE join_tokens SET uses_left = uses_left - 1
           WHERE hash = ? AND revoked_at IS NULL AND uses_left > 0 AND expires_at > ?
           RETURNING identity`,
          )
          .get(hash, now.toISOString())?.identity,
    );
  }

  /** Gives a use back (the request it was spent on was refused for another reason). */
  refund(hash: string): void {
    this.guard('join token refund', () =>
      this.db.prepare('UPDATE join_tokens SET uses_left = uses_left + 1 WHERE hash = ?').run(hash),
    );
  }

  /** Why a token hash is unusable, for a precise refusal message. */
  find(hash: string): JoinTokenRow | undefined {
    const r = this.db.prepare<[string], Row>('SELECT * FROM join_tokens WHERE hash = ?').get(hash);
    return r && toRow(r);
  }

  /** Revokes a live token and every enrollment it started (RevocationTable.revokeToken); false when none was live. */
  revoke(id: string, now: Date): boolean {
    return this.revocations.revokeToken(id, now).tokens > 0;
  }

  list(): JoinTokenRow[] {
    return this.db.prepare<[], Row>('SELECT * FROM join_tokens ORDER BY created_at DESC').all().map(toRow);
  }
}
