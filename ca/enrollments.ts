// Enrollments on the CA's side: the first certificate issued with a join token starts one, each
// renewal with a certificate continues the one that certificate belongs to (found through the
// issuance log, which keeps every certificate that has not expired). An enrollment ends
// `--max-enrollment-age` after it started: no certificate of it outlives that, and past it the
// workload must enroll again with a join token. A revoked enrollment (its token, its identity or one
// of its certificates revoked: store/revocations.ts) renews nothing.
import { randomBytes } from 'node:crypto';
import type { IssuedCertificate } from '../store/ca-material.js';
import type { EnrollmentTable } from '../store/enrollments.js';

export const DEFAULT_MAX_ENROLLMENT_AGE_SECONDS = 30 * 24 * 3600;

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
  constructor(
    private readonly table: EnrollmentTable,
    /** The issuance log: which enrollment a certificate belongs to. */
    private readonly issued: { issuedBySerial(serial: string): IssuedCertificate | undefined },
    readonly maxAgeSeconds = DEFAULT_MAX_ENROLLMENT_AGE_SECONDS,
  ) {}

  /** The first certificate from join token `tokenId` (null: adopting a certificate from before enrollments). */
  begin(identity: string, tokenId: string | null, now: Date): Enrollment {
    const id = randomBytes(16).toString('hex');
    if (!this.table.start({ id, identity, tokenId, startedAt: now.toISOString() }))
      throw new Error('could not record the enrollment in the store (see the log)');
    return { id, identity, startedAt: now, endsAt: this.endOf(now), isNew: true };
  }

  /** A renewal with the certificate `serial` of `identity`: the enrollment it continues, or EnrollmentRefused. */
  continueFrom(serial: string, identity: string, now: Date): Enrollment {
    const logged = this.issued.issuedBySerial(serial);
    if (!logged?.enrollmentId) {
      // Issued before enrollments existed (or the log lost it): adopt it into a new enrollment, so
      // upgrading does not cut every workload off; its age counts from now.
      return this.begin(identity, null, now);
    }
    const row = this.table.get(logged.enrollmentId);
    if (!row || row.identity !== identity)
      throw new EnrollmentRefused(
        `certificate ${serial} belongs to enrollment ${logged.enrollmentId}, which has ended: enroll again with a join token`,
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
  isRevoked(id: string): boolean {
    return this.table.get(id)?.revokedAt != null;
  }

  /** Forgets an enrollment whose first certificate was not issued. */
  abandon(enrollment: Enrollment): void {
    if (enrollment.isNew) this.table.remove(enrollment.id);
  }

  /** Deletes enrollments that ended more than a day ago (all their certificates have expired). */
  prune(now: Date): number {
    return this.table.pruneStartedBefore(new Date(now.getTime() - (this.maxAgeSeconds + 86_400) * 1000));
  }

  private endOf(startedAt: Date): Date {
    return new Date(startedAt.getTime() + this.maxAgeSeconds * 1000);
  }
}
