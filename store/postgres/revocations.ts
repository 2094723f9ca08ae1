// The CA's deny list in PostgreSQL (the SQLite side is store/revocations.ts). A revocation is written
// in one transaction with everything it reaches, tagged with the replica that wrote it, and announced
// on a channel at commit so the other replicas reload at once (revocation-watch.ts).
import type pg from 'pg';
import {
  normalizeSerial,
  type DeniedSerial,
  type RevocationKind,
  type RevocationOutcome,
  type RevocationRow,
} from '../revocations.js';
import { decodeRevocation, LIST_REVOCATIONS, type RevocationColumns } from '../row-codecs.js';
import type { SharedRevocations } from '../shared-store.js';
import { touched, type PgDb } from './pg-db.js';
import { REVOCATION_CHANNEL, watchRevocations } from './revocation-watch.js';

const DAY_MS = 24 * 3600 * 1000;

export class PgRevocations implements SharedRevocations {
  constructor(private readonly db: PgDb) {}

  async revokeJoinToken(
    tokenId: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { found: boolean }> {
    return this.db.transaction(async (client) => {
      const at = now.toISOString();
      const tokens = touched(
        await client.query('UPDATE join_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
          at,
          tokenId,
        ]),
      );
      const found =
        tokens > 0 || touched(await client.query('SELECT id FROM join_tokens WHERE id = $1', [tokenId])) > 0;
      const why = reason ?? `join token ${tokenId} revoked`;
      const enrollments = await revokeEnrollments(client, 'token_id', tokenId, at, why);
      if (tokens + enrollments > 0)
        await this.insert(client, 'token', tokenId, at, reason, new Date(now.getTime() + DAY_MS));
      return { found, tokens, enrollments };
    });
  }

  async revokeIdentity(identity: string, now: Date, reason?: string): Promise<RevocationOutcome> {
    return this.db.transaction(async (client) => {
      const at = now.toISOString();
      const tokens = touched(
        await client.query(
          'UPDATE join_tokens SET revoked_at = $1 WHERE identity = $2 AND revoked_at IS NULL',
          [at, identity],
        ),
      );
      const why = reason ?? `identity ${identity} revoked`;
      const enrollments = await revokeEnrollments(client, 'identity', identity, at, why);
      await this.insert(client, 'identity', identity, at, reason, undefined);
      return { tokens, enrollments };
    });
  }

  async revokeSerial(
    serial: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { enrollmentId?: string }> {
    const key = normalizeSerial(serial);
    return this.db.transaction(async (client) => {
      const at = now.toISOString();
      const issued = (
        await client.query<{ enrollment_id: string | null; not_after: string }>(
          'SELECT enrollment_id, not_after FROM issued_certificates WHERE serial = $1 OR serial = $2',
          [key, key.length % 2 ? `0${key}` : key],
        )
      ).rows[0];
      const enrollmentId = issued?.enrollment_id ?? undefined;
      const enrollments = enrollmentId
        ? await revokeEnrollments(client, 'id', enrollmentId, at, reason ?? `certificate ${key} revoked`)
        : 0;
      const pruneAfter = issued ? new Date(issued.not_after) : undefined;
      await this.insert(client, 'serial', key, at, reason, pruneAfter);
      return { tokens: 0, enrollments, ...(enrollmentId && { enrollmentId }) };
    });
  }

  async deniedSerials(now: Date): Promise<DeniedSerial[]> {
    const res = await this.db.pool.query<{ serial: string; reason: string }>(
      `SELECT subject AS serial, COALESCE(reason, 'certificate revoked') AS reason
         FROM revocations WHERE kind = 'serial'
       UNION ALL
       SELECT c.serial, COALESCE(e.revoked_reason, 'enrollment revoked') FROM issued_certificates c
         JOIN enrollments e ON e.id = c.enrollment_id
         WHERE e.revoked_at IS NOT NULL AND c.not_after > $1
       UNION ALL
       SELECT c.serial, COALESCE(r.reason, 'identity ' || r.subject || ' revoked') FROM issued_certificates c
         JOIN revocations r ON r.kind = 'identity' AND r.subject = c.identity
         WHERE c.enrollment_id IS NULL AND c.not_after > $1`,
      [now.toISOString()],
    );
    return res.rows.map((r) => ({ serial: normalizeSerial(r.serial), reason: r.reason }));
  }

  async revocationRevision(): Promise<number> {
    const res = await this.db.pool.query<{ r: string | null }>('SELECT MAX(id) AS r FROM revocations');
    return Number(res.rows[0]?.r ?? 0);
  }

  async listRevocations(): Promise<RevocationRow[]> {
    return (await this.db.pool.query<RevocationColumns>(LIST_REVOCATIONS)).rows.map(decodeRevocation);
  }

  watchRevocations(onChange: () => void, pollMs = 2000): () => void {
    return watchRevocations(this.db, () => this.revocationRevision(), onChange, pollMs);
  }

  /** Forgets revocations that can no longer match a valid certificate at `now`; how many. */
  async prune(now: Date): Promise<number> {
    return touched(
      await this.db.pool.query('DELETE FROM revocations WHERE prune_after IS NOT NULL AND prune_after < $1', [
        now.toISOString(),
      ]),
    );
  }

  /** Adds a deny-list entry tagged with this replica, and announces it to every replica at commit. */
  private async insert(
    client: pg.PoolClient,
    kind: RevocationKind,
    subject: string,
    at: string,
    reason: string | undefined,
    pruneAfter: Date | undefined,
  ): Promise<void> {
    await client.query(
      `INSERT INTO revocations (kind, subject, revoked_at, reason, prune_after, replica)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [kind, subject, at, reason ?? null, pruneAfter?.toISOString() ?? null, this.db.replica],
    );
    await client.query('SELECT pg_notify($1, $2)', [REVOCATION_CHANNEL, kind]);
  }
}

async function revokeEnrollments(
  client: pg.PoolClient,
  column: 'id' | 'identity' | 'token_id',
  value: string,
  at: string,
  reason: string,
): Promise<number> {
  return touched(
    await client.query(
      `UPDATE enrollments SET revoked_at = $1, revoked_reason = $2 WHERE ${column} = $3 AND revoked_at IS NULL`,
      [at, reason, value],
    ),
  );
}
