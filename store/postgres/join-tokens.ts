// Join tokens in PostgreSQL (the SQLite side is store/join-tokens.ts): only a hash of each is kept,
// and a use is spent in one statement, so replicas racing on a single-use token spend it once.
import type { JoinTokenRow } from '../join-tokens.js';
import { decodeJoinToken, type JoinTokenColumns } from '../row-codecs.js';
import type { NewJoinToken, SharedJoinTokens } from '../shared-store.js';
import type { PgDb } from './pg-db.js';

export class PgJoinTokens implements SharedJoinTokens {
  constructor(private readonly db: PgDb) {}

  async insertJoinToken(t: NewJoinToken): Promise<void> {
    await this.db.pool.query(
      `INSERT INTO join_tokens (id, hash, identity, expires_at, uses_left, created_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [t.id, t.hash, t.identity, t.expiresAt, t.uses, new Date().toISOString()],
    );
  }

  async consumeJoinToken(hash: string, now: Date): Promise<string | undefined> {
    // One statement: the row lock serializes replicas, and the WHERE is re-checked after the wait.
    const res = await this.db.pool.query<{ identity: string }>(
      `UPDATE join_tokens SET uses_left = uses_left - 1
       WHERE hash = $1 AND revoked_at IS NULL AND uses_left > 0 AND expires_at > $2
       RETURNING identity`,
      [hash, now.toISOString()],
    );
    return res.rows[0]?.identity;
  }

  async refundJoinToken(hash: string): Promise<void> {
    await this.db.pool.query('UPDATE join_tokens SET uses_left = uses_left + 1 WHERE hash = $1', [hash]);
  }

  async findJoinToken(hash: string): Promise<JoinTokenRow | undefined> {
    const res = await this.db.pool.query<JoinTokenColumns>('SELECT * FROM join_tokens WHERE hash = $1', [
      hash,
    ]);
    const row = res.rows[0];
    return row && decodeJoinToken(row);
  }

  async listJoinTokens(): Promise<JoinTokenRow[]> {
    const res = await this.db.pool.query<JoinTokenColumns>(
      'SELECT * FROM join_tokens ORDER BY created_at DESC',
    );
    return res.rows.map(decodeJoinToken);
  }
}
