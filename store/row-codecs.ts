// The rows of the CA's tables as both databases return them (snake_case columns, ISO strings) and
// their decoding into the records callers see. One codec per table, shared by the SQLite tables
// (store/*.ts) and the PostgreSQL ones (store/postgres/*.ts), so the two cannot drift.
import type { IssuedCertificate } from './ca-material.js';
import type { EnrollmentRow } from './enrollments.js';
import type { JoinTokenRow } from './join-tokens.js';
import type { RevocationKind, RevocationRow } from './revocations.js';

export interface JoinTokenColumns {
  id: string;
  identity: string;
  expires_at: string;
  uses_left: number;
  revoked_at: string | null;
  created_at: string;
}

export const decodeJoinToken = (r: JoinTokenColumns): JoinTokenRow => ({
  id: r.id,
  identity: r.identity,
  expiresAt: r.expires_at,
  usesLeft: r.uses_left,
  revokedAt: r.revoked_at,
  createdAt: r.created_at,
});

export interface EnrollmentColumns {
  id: string;
  identity: string;
  token_id: string | null;
  started_at: string;
  revoked_at: string | null;
  revoked_reason: string | null;
}

export const decodeEnrollment = (r: EnrollmentColumns): EnrollmentRow => ({
  id: r.id,
  identity: r.identity,
  tokenId: r.token_id,
  startedAt: r.started_at,
  revokedAt: r.revoked_at,
  revokedReason: r.revoked_reason,
});

export interface IssuedColumns {
  serial: string;
  identity: string;
  node_id: string | null;
  enrollment_id: string | null;
  not_before: string;
  not_after: string;
  issued_at: string;
}

export const decodeIssued = (r: IssuedColumns): IssuedCertificate => ({
  serial: r.serial,
  identity: r.identity,
  nodeId: r.node_id,
  enrollmentId: r.enrollment_id,
  notBefore: r.not_before,
  notAfter: r.not_after,
  issuedAt: r.issued_at,
});

/** The values of an issued_certificates row in column order (serial … issued_at). */
export const encodeIssued = (c: IssuedCertificate): (string | null)[] => [
  c.serial,
  c.identity,
  c.nodeId,
  c.enrollmentId ?? null,
  c.notBefore,
  c.notAfter,
  c.issuedAt,
];

export interface RevocationColumns {
  kind: RevocationKind;
  subject: string;
  revoked_at: string;
  reason: string | null;
}

export const decodeRevocation = (r: RevocationColumns): RevocationRow => ({
  kind: r.kind,
  subject: r.subject,
  revokedAt: r.revoked_at,
  reason: r.reason,
});

/** The statement both databases list the deny list with (newest first). */
export const LIST_REVOCATIONS = 'SELECT kind, subject, revoked_at, reason FROM revocations ORDER BY id DESC';
