// The CA's join tokens: only a hash of each token is kept. Using a token decrements its uses in one
// statement, so two concurrent first contacts cannot both spend a one-time token.
import type Database from 'better-sqlite3';
import type { RevocationTable } from './revocations.js';
import type { GuardWrite } from './snapshots.js';
import { decodeJoinToken, type JoinTokenColumns } from './row-codecs.js';

export interface JoinTokenRow {
  readonly id: string;
  readonly identity: string;
  readonly expiresAt: string;
  readonly usesLeft: number;
  readonly revokedAt: string | null;
  readonly createdAt: string;
}

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
    const r = this.db
      .prepare<[string], JoinTokenColumns>('SELECT * FROM join_tokens WHERE hash = ?')
      .get(hash);
    return r && decodeJoinToken(r);
  }

  /** Revokes a live token and every enrollment it started (RevocationTable.revokeToken); false when none was live. */
  revoke(id: string, now: Date): boolean {
    return this.revocations.revokeToken(id, now).tokens > 0;
  }

  list(): JoinTokenRow[] {
    return this.db
      .prepare<[], JoinTokenColumns>('SELECT * FROM join_tokens ORDER BY created_at DESC')
      .all()
      .map(decodeJoinToken);
  }
}
