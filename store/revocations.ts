// The CA's deny list. A revocation is written in one transaction with everything it reaches: the
// enrollments of a revoked token, every enrollment and unused token of a revoked identity, the
// enrollment of a revoked serial. Each adds a row to `revocations`, whose largest id is the list's
// revision: a running `portolan serve` polls it (one indexed read) and, when it moves, reloads the
// serials it refuses (`deniedSerials`) and closes the secure streams that present one.
import type Database from 'better-sqlite3';
import type { GuardWrite } from './snapshots.js';
import { prepared } from './prepared.js';
import { decodeRevocation, LIST_REVOCATIONS, type RevocationColumns } from './row-codecs.js';

export type RevocationKind = 'serial' | 'identity' | 'token';

export interface RevocationRow {
  readonly kind: RevocationKind;
  readonly subject: string;
  readonly revokedAt: string;
  readonly reason: string | null;
}

/** A serial the CA refuses, and why. */
export interface DeniedSerial {
  /** Lower-case hex without leading zeros. */
  readonly serial: string;
  readonly reason: string;
}

export interface RevocationOutcome {
  /** Enrollments newly revoked. */
  readonly enrollments: number;
  /** Join tokens newly revoked. */
  readonly tokens: number;
}

const DAY_MS = 24 * 3600 * 1000;

/** A serial as the deny list keys it: lower-case hex, no separators, no leading zeros. */
export function normalizeSerial(serial: string): string {
  return serial
    .toLowerCase()
    .replace(/[:\s]/g, '')
    .replace(/^0+(?=.)/, '');
}

export class RevocationTable {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
  ) {}

  /** Changes whenever the deny list does (a new revocation, or pruning of the newest). */
  revision(): number {
    // Polled every second by each serving process: compiled once (prepared.ts).
    return prepared<[], { r: number | null }>(this.db, 'SELECT MAX(id) AS r FROM revocations').get()?.r ?? 0;
  }

  /**
   * Every serial the CA refuses, as of `now`: the ones revoked by serial, and the still-valid
   * certificates of revoked enrollments and (issued before enrollments existed) of revoked
   * identities. Certificates that have expired are refused by TLS already and left out.
   */
  deniedSerials(now: Date): DeniedSerial[] {
    const rows = this.db
      .prepare<[string, string], { serial: string; reason: string }>(
        `SELECT subject AS serial, COALESCE(reason, 'certificate revoked') AS reason
           FROM revocations WHERE kind = 'serial'
         UNION ALL
         SELECT c.serial, COALESCE(e.revoked_reason, 'enrollment revoked') FROM issued_certificates c
           JOIN enrollments e ON e.id = c.enrollment_id
           WHERE e.revoked_at IS NOT NULL AND c.not_after > ?
         UNION ALL
         SELECT c.serial, COALESCE(r.reason, 'identity ' || r.subject || ' revoked') FROM issued_certificates c
           JOIN revocations r ON r.kind = 'identity' AND r.subject = c.identity
           WHERE c.enrollment_id IS NULL AND c.not_after > ?`,
      )
      .all(now.toISOString(), now.toISOString());
    return rows.map((r) => ({ serial: normalizeSerial(r.serial), reason: r.reason }));
  }

  /** A join token and every enrollment it started; undefined when the write failed. */
  revokeToken(tokenId: string, now: Date, reason?: string): RevocationOutcome & { found: boolean } {
    return (
      this.guard(`revoke join token ${tokenId}`, () =>
        this.db.transaction(() => {
          const at = now.toISOString();
          const tokens = this.db
            .prepare('UPDATE join_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
            .run(at, tokenId).changes;
          const found =
            tokens > 0 ||
            this.db
              .prepare<[string], { id: string }>('SELECT id FROM join_tokens WHERE id = ?')
              .get(tokenId) !== undefined;
          const enrollments = this.revokeEnrollments(
            'token_id = ?',
            tokenId,
            at,
            reason ?? `join token ${tokenId} revoked`,
          );
          if (tokens + enrollments > 0)
            this.insert('token', tokenId, at, reason, new Date(now.getTime() + DAY_MS));
          return { found, tokens, enrollments };
        })(),
      ) ?? { found: false, tokens: 0, enrollments: 0 }
    );
  }

  /** Every enrollment and every unused join token of an identity, and its certificates from before enrollments. */
  revokeIdentity(identity: string, now: Date, reason?: string): RevocationOutcome {
    return (
      this.guard(`revoke identity ${identity}`, () =>
        this.db.transaction(() => {
          const at = now.toISOString();
          const why = reason ?? `identity ${identity} revoked`;
          const tokens = this.db
            .prepare('UPDATE join_tokens SET revoked_at = ? WHERE identity = ? AND revoked_at IS NULL')
            .run(at, identity).changes;
          const enrollments = this.revokeEnrollments('identity = ?', identity, at, why);
          this.insert('identity', identity, at, reason, undefined);
          return { tokens, enrollments };
        })(),
      ) ?? { tokens: 0, enrollments: 0 }
    );
  }

  /**
   * One certificate, and the enrollment it belongs to when the issuance log still knows it (a
   * stolen key may already have renewed: its renewals are refused too).
   */
  revokeSerial(serial: string, now: Date, reason?: string): RevocationOutcome & { enrollmentId?: string } {
    const key = normalizeSerial(serial);
    return (
      this.guard(`revoke certificate ${key}`, () =>
        this.db.transaction(() => {
          const at = now.toISOString();
          const issued = this.db
            .prepare<[string, string], { enrollment_id: string | null; not_after: string }>(
              'SELECT enrollment_id, not_after FROM issued_certificates WHERE serial = ? OR serial = ?',
            )
            .get(key, key.length % 2 ? `0${key}` : key);
          const enrollmentId = issued?.enrollment_id ?? undefined;
          const enrollments = enrollmentId
            ? this.revokeEnrollments('id = ?', enrollmentId, at, reason ?? `certificate ${key} revoked`)
            : 0;
          this.insert('serial', key, at, reason, issued ? new Date(issued.not_after) : undefined);
          return { tokens: 0, enrollments, ...(enrollmentId && { enrollmentId }) };
        })(),
      ) ?? { tokens: 0, enrollments: 0 }
    );
  }

  /** Drops entries that can no longer match a valid certificate; returns how many. */
  prune(now: Date): number {
    return (
      this.guard('revocation pruning', () => {
        return this.db
          .prepare('DELETE FROM revocations WHERE prune_after IS NOT NULL AND prune_after < ?')
          .run(now.toISOString()).changes;
      }) ?? 0
    );
  }

  list(): RevocationRow[] {
    return this.db.prepare<[], RevocationColumns>(LIST_REVOCATIONS).all().map(decodeRevocation);
  }

  private revokeEnrollments(where: string, value: string, at: string, reason: string): number {
    return this.db
      .prepare(
        `UPDATE enrollments SET revoked_at = ?, revoked_reason = ? WHERE ${where} AND revoked_at IS NULL`,
      )
      .run(at, reason, value).changes;
  }

  private insert(
    kind: RevocationKind,
    subject: string,
    at: string,
    reason: string | undefined,
    pruneAfter: Date | undefined,
  ): void {
    this.db
      .prepare(
        'INSERT INTO revocations (kind, subject, revoked_at, reason, prune_after) VALUES (?, ?, ?, ?, ?)',
      )
      .run(kind, subject, at, reason ?? null, pruneAfter?.toISOString() ?? null);
  }
}
