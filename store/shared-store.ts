// The seam for state that several control-plane replicas share (issue #20): the CA's material, join
// tokens, enrollments and the revocation deny list. Asynchronous, because PostgreSQL is; the SQLite
// implementation (sqlite-shared.ts) resolves at once over the synchronous tables. Nothing on the xDS
// push path calls it: the CA and the secure port do, on enrollment, renewal and revocation sweeps.
import type { IssuedCertificate } from './ca-material.js';
import type { EnrollmentRow } from './enrollments.js';
import type { JoinTokenRow } from './join-tokens.js';
import type { DeniedSerial, RevocationOutcome, RevocationRow } from './revocations.js';

export interface NewJoinToken {
  readonly id: string;
  /** sha256 of the whole token, hex: the token itself is never stored. */
  readonly hash: string;
  readonly identity: string;
  readonly expiresAt: string;
  readonly uses: number;
}

export interface NewEnrollment {
  readonly id: string;
  readonly identity: string;
  readonly tokenId: string | null;
  readonly startedAt: string;
}

/** The CA's named secrets (root key and certificate, intermediates). */
export interface SharedCaMaterial {
  /** CA material under `name`, or undefined. */
  getMaterial(name: string): Promise<Buffer | undefined>;
  /**
   * The material under `name`, created by `create` when absent. On PostgreSQL the check and the
   * creation run under an advisory lock, so replicas starting at once create it exactly once and
   * every one of them returns that one value.
   */
  getOrCreateMaterial(name: string, create: () => Promise<Buffer>): Promise<Buffer>;
  /** Replaces the value only if it is still `expected`; whether it did. */
  replaceMaterial(name: string, expected: Buffer, value: Buffer): Promise<boolean>;
}

/** Join tokens, kept by hash. */
export interface SharedJoinTokens {
  insertJoinToken(token: NewJoinToken): Promise<void>;
  /** Spends one use of a live token atomically (across replicas); its identity, or undefined. */
  consumeJoinToken(hash: string, now: Date): Promise<string | undefined>;
  refundJoinToken(hash: string): Promise<void>;
  findJoinToken(hash: string): Promise<JoinTokenRow | undefined>;
  listJoinTokens(): Promise<JoinTokenRow[]>;
}

/** The log of issued certificates. */
export interface SharedIssuanceLog {
  /** Logs an issued certificate (how a renewal on any replica finds its enrollment). */
  recordIssued(cert: IssuedCertificate): Promise<void>;
  /** The log entry of one certificate (serial in hex), while it is kept. */
  issuedBySerial(serial: string): Promise<IssuedCertificate | undefined>;
}

/** Enrollments: the chains of certificates that descend from a join token. */
export interface SharedEnrollments {
  startEnrollment(enrollment: NewEnrollment): Promise<void>;
  getEnrollment(id: string): Promise<EnrollmentRow | undefined>;
  /** Forgets an enrollment whose first certificate was not issued. */
  removeEnrollment(id: string): Promise<void>;
  countEnrollmentsByToken(tokenId: string): Promise<number>;
}

/** The deny list, and how a replica learns that another changed it. */
export interface SharedRevocations {
  /** A join token and every enrollment it started. */
  revokeJoinToken(
    tokenId: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { found: boolean }>;
  /** Every enrollment and unused join token of an identity, and its certificates from before enrollments. */
  revokeIdentity(identity: string, now: Date, reason?: string): Promise<RevocationOutcome>;
  /** One certificate, and the enrollment it belongs to when the issuance log knows it. */
  revokeSerial(
    serial: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { enrollmentId?: string }>;
  /** Changes whenever the deny list does: what a replica polls to notice another's revocation. */
  revocationRevision(): Promise<number>;
  /** Every serial refused as of `now` (as RevocationTable.deniedSerials). */
  deniedSerials(now: Date): Promise<DeniedSerial[]>;
  listRevocations(): Promise<RevocationRow[]>;
  /**
   * Calls `onChange` soon after the deny list changes on any replica (PostgreSQL: LISTEN/NOTIFY,
   * with a poll as a backstop; SQLite: a poll of the revision). Returns the function that stops it.
   */
  watchRevocations(onChange: () => void, pollMs?: number): () => void;
}

/** One config file's load as the stores keep it (store/config-loads.ts). */
export interface SharedConfigLoad {
  /** Relative to the config directory. */
  readonly path: string;
  /** The hash of the text it loaded (store/config-loads.ts contentHash). */
  readonly contentHash: string;
  /** The build that loaded it (config-dir/stored-load.ts loadFormat). */
  readonly format: string;
  /** JSON: resources and warnings. */
  readonly load: string;
}

/**
 * What config files loaded to, for replicas to share (a cache: a start with an empty --data-dir
 * takes a file whose text another replica loaded with the same build without a parse). One row per
 * path, last writer wins.
 */
export interface SharedConfigLoads {
  /** The rows made by build `format`, by path; at most `limit` of them. */
  configLoads(format: string, limit: number): Promise<Map<string, SharedConfigLoad>>;
  /** Upserts `rows` (one per path) and deletes the rows of `removed`. */
  writeConfigLoads(rows: readonly SharedConfigLoad[], removed: readonly string[]): Promise<void>;
}

/** The singleton clean-up of what can no longer matter. */
export interface SharedPruning {
  /**
   * Forgets enrollments started before `enrollmentsBefore` (all their certificates have expired) and
   * revocations that can no longer match a valid certificate at `now`; how many of each. A singleton
   * job: with several replicas, the leader runs it.
   */
  prune(now: Date, enrollmentsBefore: Date): Promise<{ enrollments: number; revocations: number }>;
}

/** Every concern at once: what the CA and the secure port are handed. */
export interface SharedStore
  extends
    SharedCaMaterial,
    SharedJoinTokens,
    SharedIssuanceLog,
    SharedEnrollments,
    SharedRevocations,
    SharedPruning,
    SharedConfigLoads {
  readonly kind: 'sqlite' | 'postgres';
  /** The schema version applied (the count of migrations). */
  schemaVersion(): Promise<number>;
  close(): Promise<void>;
}

/**
 * The shared store could not be reached (connection refused or lost, a timeout, the server shutting
 * down) as opposed to refusing the statement: the CA answers UNAVAILABLE, and renewals fall back on
 * what this replica has cached.
 */
export function isStoreUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as Error & { code?: unknown }).code;
  // A SQLSTATE (five characters) outside the connection (08), operator intervention (57),
  // resources (53) and system (58) classes is the statement's own fault, not the link's.
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return /^(08|57|53|58)/.test(code);
  if (typeof code === 'string') return true; // ECONNREFUSED, ECONNRESET, ETIMEDOUT, ENOTFOUND…
  return /timeout|terminated|Connection|ECONNREFUSED|not queryable|pool/i.test(err.message);
}
