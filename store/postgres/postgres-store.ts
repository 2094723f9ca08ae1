// The SharedStore on PostgreSQL (`--store postgres://…`), through the maintained `pg` client and a
// pool. Shaped like the SQLite side: one module per table (ca-material.ts, join-tokens.ts, …) over
// one connection (pg-db.ts), and this class, which opens them and answers the SharedStore and
// ReplicaCoordination seams by handing each call to its table. Every replica opens it the same way:
// migrations run under an advisory lock (migrate.ts), and a newer schema is refused. The connection
// string takes what libpq users expect (user, password, host, port, database, sslmode); PGPASSWORD
// and the other PG* variables fill what it leaves out.
import pg from 'pg';
import type { HistoryEntry } from '../history.js';
import type { IssuedCertificate } from '../ca-material.js';
import type { EnrollmentRow } from '../enrollments.js';
import type { JoinTokenRow } from '../join-tokens.js';
import { redactStoreUrl } from '../redact-url.js';
import type { DeniedSerial, RevocationOutcome, RevocationRow } from '../revocations.js';
import type { Leadership, ReplicaCoordination, ReplicaHeartbeat } from '../replicas.js';
import type { NewEnrollment, NewJoinToken, SharedConfigLoad, SharedStore } from '../shared-store.js';
import { PgAutoRegistrationRows } from './auto-registration-rows.js';
import { PgCaMaterial } from './ca-material.js';
import { PgConfigLoads } from './config-loads.js';
import { PgEnrollments } from './enrollments.js';
import { PgHistory } from './history.js';
import { PgJoinTokens } from './join-tokens.js';
import { migrate, readVersion } from './migrate.js';
import { PG_MIGRATIONS } from './migrations.js';
import { PgDb } from './pg-db.js';
import { PgRegistryHosts, type StoredRegistrySnapshot } from './registry-hosts.js';
import { PgReplicas } from './replicas.js';
import { PgRevocations } from './revocations.js';

export type { RegistryHostRow } from './registry-hosts.js';

export interface PostgresStoreOptions {
  readonly url: string;
  /** This replica's name, written into the rows it adds (history, revocations, issued certificates). */
  readonly replica: string;
  /** Pool size; default 10. */
  readonly maxConnections?: number;
  /** Deadline for a connection and for each statement, ms; default 5000. */
  readonly timeoutMs?: number;
  /** Tests only: apply at most this many migrations. */
  readonly migrateTo?: number;
  /** Tests only: the migration list (to plant a newer schema). */
  readonly migrations?: readonly string[];
}

export class PostgresStore implements SharedStore, ReplicaCoordination {
  readonly kind = 'postgres' as const;
  readonly replica: string;
  readonly ca: PgCaMaterial;
  readonly joinTokens: PgJoinTokens;
  readonly enrollments: PgEnrollments;
  readonly revocations: PgRevocations;
  readonly replicas: PgReplicas;
  readonly autoRegistrations: PgAutoRegistrationRows;
  readonly registryHosts: PgRegistryHosts;
  readonly history: PgHistory;
  readonly configLoadRows: PgConfigLoads;

  private constructor(private readonly db: PgDb) {
    this.replica = db.replica;
    this.ca = new PgCaMaterial(db);
    this.joinTokens = new PgJoinTokens(db);
    this.enrollments = new PgEnrollments(db);
    this.revocations = new PgRevocations(db);
    this.replicas = new PgReplicas(db);
    this.autoRegistrations = new PgAutoRegistrationRows(db);
    this.registryHosts = new PgRegistryHosts(db);
    this.history = new PgHistory(db);
    this.configLoadRows = new PgConfigLoads(db);
  }

  /** Connects, migrates (under an advisory lock) and returns the store; throws with the reason. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const timeout = options.timeoutMs ?? 5000;
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: timeout,
      statement_timeout: timeout,
      // Client-side too: a server that stopped answering (SIGSTOP, a partition) fails the query
      // instead of hanging it, so the store is reported unreachable and callers fall back.
      query_timeout: timeout,
      idleTimeoutMillis: 30_000,
      application_name: `portolan ${options.replica}`,
    });
    // An idle client's error (the server went away) must not crash the process: the next query fails.
    pool.on('error', () => undefined);
    try {
      const migrations = options.migrations ?? PG_MIGRATIONS;
      await migrate(pool, migrations, options.migrateTo ?? migrations.length, migrations.length);
      return new PostgresStore(new PgDb(pool, options.replica, options.url));
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw new Error(`PostgreSQL store ${redactStoreUrl(options.url)}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  schemaVersion(): Promise<number> {
    return readVersion(this.db.pool);
  }

  // SharedCaMaterial and SharedIssuanceLog
  getMaterial(name: string): Promise<Buffer | undefined> {
    return this.ca.getMaterial(name);
  }
  getOrCreateMaterial(name: string, create: () => Promise<Buffer>): Promise<Buffer> {
    return this.ca.getOrCreateMaterial(name, create);
  }
  replaceMaterial(name: string, expected: Buffer, value: Buffer): Promise<boolean> {
    return this.ca.replaceMaterial(name, expected, value);
  }
  recordIssued(cert: IssuedCertificate): Promise<void> {
    return this.ca.recordIssued(cert);
  }
  issuedBySerial(serial: string): Promise<IssuedCertificate | undefined> {
    return this.ca.issuedBySerial(serial);
  }

  // SharedJoinTokens
  insertJoinToken(token: NewJoinToken): Promise<void> {
    return this.joinTokens.insertJoinToken(token);
  }
  consumeJoinToken(hash: string, now: Date): Promise<string | undefined> {
    return this.joinTokens.consumeJoinToken(hash, now);
  }
  refundJoinToken(hash: string): Promise<void> {
    return this.joinTokens.refundJoinToken(hash);
  }
  findJoinToken(hash: string): Promise<JoinTokenRow | undefined> {
    return this.joinTokens.findJoinToken(hash);
  }
  listJoinTokens(): Promise<JoinTokenRow[]> {
    return this.joinTokens.listJoinTokens();
  }

  // SharedEnrollments
  startEnrollment(enrollment: NewEnrollment): Promise<void> {
    return this.enrollments.startEnrollment(enrollment);
  }
  getEnrollment(id: string): Promise<EnrollmentRow | undefined> {
    return this.enrollments.getEnrollment(id);
  }
  removeEnrollment(id: string): Promise<void> {
    return this.enrollments.removeEnrollment(id);
  }
  countEnrollmentsByToken(tokenId: string): Promise<number> {
    return this.enrollments.countEnrollmentsByToken(tokenId);
  }

  // SharedRevocations
  revokeJoinToken(
    tokenId: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { found: boolean }> {
    return this.revocations.revokeJoinToken(tokenId, now, reason);
  }
  revokeIdentity(identity: string, now: Date, reason?: string): Promise<RevocationOutcome> {
    return this.revocations.revokeIdentity(identity, now, reason);
  }
  revokeSerial(
    serial: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { enrollmentId?: string }> {
    return this.revocations.revokeSerial(serial, now, reason);
  }
  revocationRevision(): Promise<number> {
    return this.revocations.revocationRevision();
  }
  deniedSerials(now: Date): Promise<DeniedSerial[]> {
    return this.revocations.deniedSerials(now);
  }
  listRevocations(): Promise<RevocationRow[]> {
    return this.revocations.listRevocations();
  }
  watchRevocations(onChange: () => void, pollMs?: number): () => void {
    return this.revocations.watchRevocations(onChange, pollMs);
  }

  // SharedPruning
  async prune(now: Date, enrollmentsBefore: Date): Promise<{ enrollments: number; revocations: number }> {
    return {
      enrollments: await this.enrollments.pruneStartedBefore(enrollmentsBefore),
      revocations: await this.revocations.prune(now),
    };
  }

  // SharedConfigLoads
  configLoads(format: string, limit: number): Promise<Map<string, SharedConfigLoad>> {
    return this.configLoadRows.all(format, limit);
  }
  writeConfigLoads(rows: readonly SharedConfigLoad[], removed: readonly string[]): Promise<void> {
    return this.configLoadRows.write(rows, removed);
  }

  // ReplicaCoordination
  heartbeat(startedAt: string, proxies: readonly string[], now?: Date): Promise<void> {
    return this.replicas.heartbeat(startedAt, proxies, now);
  }
  listReplicas(): Promise<ReplicaHeartbeat[]> {
    return this.replicas.listReplicas();
  }
  lead(job: string, onChange?: (leading: boolean) => void, retryMs?: number): Leadership {
    return this.replicas.lead(job, onChange, retryMs);
  }

  /** Every replica's newest history rows, newest first. */
  recentHistory(limit: number): Promise<HistoryEntry[]> {
    return this.history.recent(limit);
  }

  /** Every registry's stored snapshot rows, with when (and by which replica) they were synced. */
  loadRegistrySnapshots(): Promise<StoredRegistrySnapshot[]> {
    return this.registryHosts.load();
  }

  async close(): Promise<void> {
    await this.db.pool.end();
  }
}
