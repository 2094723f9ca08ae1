// Enrollments on the CA's side: the first certificate issued with a join token starts one, each
// renewal with a certificate continues the one that certificate belongs to (found through the
// issuance log, which keeps every certificate that has not expired). An enrollment ends
// `--max-enrollment-age` after it started: no certificate of it outlives that, and past it the
// workload must enroll again with a join token. A revoked enrollment (its token, its identity or one
// of its certificates revoked: store/revocations.ts) renews nothing.
//
// The enrollments and the log are in the shared store. What this replica has read or written is
// also kept in memory (bounded), so that while the shared store is unreachable a workload it knows
// still renews — its revocations as last seen still apply — while a new enrollment is refused.
import { randomBytes } from 'node:crypto';
import type { EnrollmentRow } from '../store/enrollments.js';
import { normalizeSerial } from '../store/revocations.js';
import { StoreUnavailable, type CaStore } from './ca-store.js';

export const DEFAULT_MAX_ENROLLMENT_AGE_SECONDS = 30 * 24 * 3600;

/** Enrollments and certificate → enrollment links kept in memory for renewals during an outage. */
const MAX_CACHED = 100_000;

export interface Enrollment {
  readonly id: string;
  readonly identity: string;
  readonly startedAt: Date;
  /** No certificate of the enrollment is valid past this; renewals are refused from then on. */
  readonly endsAt: Date;
  /** Started by this request: forgotten again if the certificate is not issued after all. */
  readonly isNew: boolean;
}

/** A certificate that may not be renewed; the workload needs a join token again. */
export class EnrollmentRefused extends Error {}

export class Enrollments {
  private readonly rows = new Map<string, EnrollmentRow>();
  /** Certificate serial (normalized) → enrollment id. */
  private readonly links = new Map<string, string>();

  constructor(
    private readonly store: Pick<
      CaStore,
      'startEnrollment' | 'getEnrollment' | 'removeEnrollment' | 'issuedBySerial'
    >,
    readonly maxAgeSeconds = DEFAULT_MAX_ENROLLMENT_AGE_SECONDS,
  ) {}

  /** The first certificate from join token `tokenId` (null: adopting a certificate from before enrollments). */
  async begin(identity: string, tokenId: string | null, now: Date): Promise<Enrollment> {
    const id = randomBytes(16).toString('hex');
    const row = { id, identity, tokenId, startedAt: now.toISOString() };
    await this.store.startEnrollment(row);
    this.remember({ ...row, revokedAt: null, revokedReason: null });
    return { id, identity, startedAt: now, endsAt: this.endOf(now), isNew: true };
  }

  /** Links an issued certificate to its enrollment in memory (for renewals during an outage). */
  issued(serial: string, enrollmentId: string): void {
    cache(this.links, normalizeSerial(serial), enrollmentId);
  }

  /** A renewal with the certificate `serial` of `identity`: the enrollment it continues, or EnrollmentRefused. */
  async continueFrom(serial: string, identity: string, now: Date): Promise<Enrollment> {
    const key = normalizeSerial(serial);
    let enrollmentId: string | undefined;
    let row: EnrollmentRow | undefined;
    try {
      const logged = await this.store.issuedBySerial(serial);
      enrollmentId = logged?.enrollmentId ?? undefined;
      if (!enrollmentId) {
        // Issued before enrollments existed (or the log lost it): adopt it into a new enrollment, so
        // upgrading does not cut every workload off; its age counts from now.
        return await this.begin(identity, null, now);
      }
      row = await this.store.getEnrollment(enrollmentId);
      if (row) this.remember(row);
      cache(this.links, key, enrollmentId);
    } catch (err) {
      if (!(err instanceof StoreUnavailable)) throw err;
      // The shared store is unreachable: renew from what this replica knows, or refuse for now.
      enrollmentId = this.links.get(key) ?? this.onlyEnrollmentOf(identity);
      row = enrollmentId ? this.rows.get(enrollmentId) : undefined;
      if (!row) throw err;
    }
    if (!row || row.identity !== identity)
      throw new EnrollmentRefused(
        `certificate ${serial} belongs to enrollment ${enrollmentId}, which has ended: enroll again with a join token`,
      );
    if (row.revokedAt)
      throw new EnrollmentRefused(
        `enrollment ${row.id}${row.tokenId ? ` (join token ${row.tokenId})` : ''} was revoked at ${row.revokedAt}` +
          `${row.revokedReason ? `: ${row.revokedReason}` : ''}`,
      );
    const startedAt = new Date(row.startedAt);
    const endsAt = this.endOf(startedAt);
    if (now >= endsAt)
      throw new EnrollmentRefused(
        `enrollment ${row.id} started at ${row.startedAt} and reached the maximum age of ${this.maxAgeSeconds}s ` +
          '(--max-enrollment-age): enroll again with a join token',
      );
    return { id: row.id, identity, startedAt, endsAt, isNew: false };
  }

  /** Whether the enrollment has been revoked (checked again after signing, against a revocation racing it). */
  async isRevoked(id: string): Promise<boolean> {
    try {
      const row = await this.store.getEnrollment(id);
      if (row) this.remember(row);
      return row?.revokedAt != null;
    } catch (err) {
      if (!(err instanceof StoreUnavailable)) throw err;
      return this.rows.get(id)?.revokedAt != null; // as last seen
    }
  }

  /** Forgets an enrollment whose first certificate was not issued. */
  async abandon(enrollment: Enrollment): Promise<void> {
    if (!enrollment.isNew) return;
    this.rows.delete(enrollment.id);
    await this.store.removeEnrollment(enrollment.id).catch(() => undefined);
  }

  /** Enrollments that started before this have ended more than a day ago (all their certificates expired). */
  pruneCutoff(now: Date): Date {
    return new Date(now.getTime() - (this.maxAgeSeconds + 86_400) * 1000);
  }

  /**
   * A certificate another replica issued is not linked here; when this replica knows exactly one
   * enrollment of the identity, the certificate (signed by our CA, for that identity) continues it.
   * With several, which one is unknown: refused until the store returns.
   */
  private onlyEnrollmentOf(identity: string): string | undefined {
    let found: string | undefined;
    for (const row of this.rows.values()) {
      if (row.identity !== identity) continue;
      if (found) return undefined;
      found = row.id;
    }
    return found;
  }

  private remember(row: EnrollmentRow): void {
    cache(this.rows, row.id, row);
  }

  private endOf(startedAt: Date): Date {
    return new Date(startedAt.getTime() + this.maxAgeSeconds * 1000);
  }
}

/** Sets `key` (as the newest), dropping the oldest entry past MAX_CACHED. */
function cache<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MAX_CACHED) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
}
