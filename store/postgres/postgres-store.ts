// The SharedStore on PostgreSQL (`--store postgres://…`), through the maintained `pg` client and a
// pool. Every replica opens it the same way: migrations run under an advisory lock (so replicas
// starting together apply each once), and a newer schema is refused. The connection string takes
// what libpq users expect (user, password, host, port, database, sslmode); PGPASSWORD and the other
// PG* variables fill what it leaves out.
import pg from 'pg';
import type { HistoryEntry } from '../history.js';
import type { IssuedCertificate } from '../ca-material.js';
import type { EnrollmentRow } from '../enrollments.js';
import type { JoinTokenRow } from '../join-tokens.js';
import {
  normalizeSerial,
  type DeniedSerial,
  type RevocationKind,
  type RevocationOutcome,
  type RevocationRow,
} from '../revocations.js';
import type { Leadership, ReplicaCoordination, ReplicaHeartbeat } from '../replicas.js';
import type { NewEnrollment, NewJoinToken, SharedStore } from '../shared-store.js';
import { leadJob } from './leadership.js';
import { PG_MIGRATIONS } from './migrations.js';

/** Advisory lock keys (any constant 64-bit numbers, unique to Portolan's uses). */
const MIGRATION_LOCK = 0x706f72746f6c01n;

const DAY_MS = 24 * 3600 * 1000;

/** The channel a revocation is announced on (delivered at commit, to every replica listening). */
const REVOCATION_CHANNEL = 'portolan_revocations';

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

interface TokenRow {
  id: string;
  identity: string;
  expires_at: string;
  uses_left: number;
  revoked_at: string | null;
  created_at: string;
}

const toToken = (r: TokenRow): JoinTokenRow => ({
  id: r.id,
  identity: r.identity,
  expiresAt: r.expires_at,
  usesLeft: r.uses_left,
  revokedAt: r.revoked_at,
  createdAt: r.created_at,
});

/** One hostname of a registry snapshot (JSON as store/snapshot-codec.ts writes it). */
export interface RegistryHostRow {
  readonly host: string;
  readonly service: string | null;
  readonly endpoints: string | null;
}

export class PostgresStore implements SharedStore, ReplicaCoordination {
  readonly kind = 'postgres' as const;

  private constructor(
    private readonly pool: pg.Pool,
    readonly replica: string,
    private readonly url: string,
  ) {}

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
      return new PostgresStore(pool, options.replica, options.url);
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw new Error(`PostgreSQL store ${redact(options.url)}: ${(err as Error).message}`, { cause: err });
    }
  }

  async schemaVersion(): Promise<number> {
    return readVersion(this.pool);
  }

  async getMaterial(name: string): Promise<Buffer | undefined> {
    const res = await this.pool.query<{ value: Buffer }>('SELECT value FROM ca_material WHERE name = $1', [
      name,
    ]);
    return res.rows[0]?.value;
  }

  async getOrCreateMaterial(name: string, create: () => Promise<Buffer>): Promise<Buffer> {
    const existing = await this.getMaterial(name);
    if (existing) return existing;
    return this.transaction(async (client) => {
      // One creator at a time per name; the others wait here, then find it made.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('portolan.ca_material.' || $1))", [name]);
      const found = await client.query<{ value: Buffer }>('SELECT value FROM ca_material WHERE name = $1', [
        name,
      ]);
      const stored = found.rows[0]?.value;
      if (stored) return stored;
      const value = await create();
      await client.query('INSERT INTO ca_material (name, value, created_at) VALUES ($1, $2, $3)', [
        name,
        value,
        new Date().toISOString(),
      ]);
      return value;
    });
  }

  async replaceMaterial(name: string, expected: Buffer, value: Buffer): Promise<boolean> {
    const res = await this.pool.query(
      'UPDATE ca_material SET value = $1, created_at = $2 WHERE name = $3 AND value = $4',
      [value, new Date().toISOString(), name, expected],
    );
    return (res.rowCount ?? 0) > 0;
  }

  async insertJoinToken(t: NewJoinToken): Promise<void> {
    await this.pool.query(
      `INSERT INTO join_tokens (id, hash, identity, expires_at, uses_left, created_at)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [t.id, t.hash, t.identity, t.expiresAt, t.uses, new Date().toISOString()],
    );
  }

  async consumeJoinToken(hash: string, now: Date): Promise<string | undefined> {
    // One statement: the row lock serializes replicas, and the WHERE is re-checked after the wait,
    // so a single-use token raced on two replicas is spent once.
    const res = await this.pool.query<{ identity: string }>(
      `UPDATE join_tokens SET uses_left = uses_left - 1
       WHERE hash = $1 AND revoked_at IS NULL AND uses_left > 0 AND expires_at > $2
       RETURNING identity`,
      [hash, now.toISOString()],
    );
    return res.rows[0]?.identity;
  }

  async refundJoinToken(hash: string): Promise<void> {
    await this.pool.query('UPDATE join_tokens SET uses_left = uses_left + 1 WHERE hash = $1', [hash]);
  }

  async findJoinToken(hash: string): Promise<JoinTokenRow | undefined> {
    const res = await this.pool.query<TokenRow>('SELECT * FROM join_tokens WHERE hash = $1', [hash]);
    const row = res.rows[0];
    return row && toToken(row);
  }

  async listJoinTokens(): Promise<JoinTokenRow[]> {
    const res = await this.pool.query<TokenRow>('SELECT * FROM join_tokens ORDER BY created_at DESC');
    return res.rows.map(toToken);
  }

  async startEnrollment(e: NewEnrollment): Promise<void> {
    await this.pool.query(
      'INSERT INTO enrollments (id, identity, token_id, started_at) VALUES ($1, $2, $3, $4)',
      [e.id, e.identity, e.tokenId, e.startedAt],
    );
  }

  async getEnrollment(id: string): Promise<EnrollmentRow | undefined> {
    const res = await this.pool.query<{
      id: string;
      identity: string;
      token_id: string | null;
      started_at: string;
      revoked_at: string | null;
      revoked_reason: string | null;
    }>('SELECT * FROM enrollments WHERE id = $1', [id]);
    const r = res.rows[0];
    return (
      r && {
        id: r.id,
        identity: r.identity,
        tokenId: r.token_id,
        startedAt: r.started_at,
        revokedAt: r.revoked_at,
        revokedReason: r.revoked_reason,
      }
    );
  }

  async revokeJoinToken(
    tokenId: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { found: boolean }> {
    return this.transaction(async (client) => {
      const at = now.toISOString();
      const tokens =
        (
          await client.query('UPDATE join_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
            at,
            tokenId,
          ])
        ).rowCount ?? 0;
      const found =
        tokens > 0 ||
        ((await client.query('SELECT id FROM join_tokens WHERE id = $1', [tokenId])).rowCount ?? 0) > 0;
      const enrollments = await revokeEnrollments(
        client,
        'token_id',
        tokenId,
        at,
        reason ?? `join token ${tokenId} revoked`,
      );
      if (tokens + enrollments > 0)
        await this.insertRevocation(client, 'token', tokenId, at, reason, new Date(now.getTime() + DAY_MS));
      return { found, tokens, enrollments };
    });
  }

  async recordIssued(cert: IssuedCertificate): Promise<void> {
    await this.pool.query(
      `INSERT INTO issued_certificates (serial, identity, node_id, enrollment_id, not_before, not_after, issued_at, replica)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        cert.serial,
        cert.identity,
        cert.nodeId,
        cert.enrollmentId ?? null,
        cert.notBefore,
        cert.notAfter,
        cert.issuedAt,
        this.replica,
      ],
    );
  }

  async issuedBySerial(serial: string): Promise<IssuedCertificate | undefined> {
    const hex = serial.toLowerCase().replace(/^0+(?=.)/, '');
    const res = await this.pool.query<{
      serial: string;
      identity: string;
      node_id: string | null;
      enrollment_id: string | null;
      not_before: string;
      not_after: string;
      issued_at: string;
    }>('SELECT * FROM issued_certificates WHERE serial IN ($1, $2)', [hex, `0${hex}`]);
    const r = res.rows[0];
    return (
      r && {
        serial: r.serial,
        identity: r.identity,
        nodeId: r.node_id,
        enrollmentId: r.enrollment_id,
        notBefore: r.not_before,
        notAfter: r.not_after,
        issuedAt: r.issued_at,
      }
    );
  }

  async removeEnrollment(id: string): Promise<void> {
    await this.pool.query('DELETE FROM enrollments WHERE id = $1', [id]);
  }

  async countEnrollmentsByToken(tokenId: string): Promise<number> {
    const res = await this.pool.query<{ n: string }>(
      'SELECT COUNT(*) AS n FROM enrollments WHERE token_id = $1',
      [tokenId],
    );
    return Number(res.rows[0]?.n ?? 0);
  }

  async revokeIdentity(identity: string, now: Date, reason?: string): Promise<RevocationOutcome> {
    return this.transaction(async (client) => {
      const at = now.toISOString();
      const tokens =
        (
          await client.query(
            'UPDATE join_tokens SET revoked_at = $1 WHERE identity = $2 AND revoked_at IS NULL',
            [at, identity],
          )
        ).rowCount ?? 0;
      const enrollments = await revokeEnrollments(
        client,
        'identity',
        identity,
        at,
        reason ?? `identity ${identity} revoked`,
      );
      await this.insertRevocation(client, 'identity', identity, at, reason, undefined);
      return { tokens, enrollments };
    });
  }

  async revokeSerial(
    serial: string,
    now: Date,
    reason?: string,
  ): Promise<RevocationOutcome & { enrollmentId?: string }> {
    const key = normalizeSerial(serial);
    return this.transaction(async (client) => {
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
      await this.insertRevocation(
        client,
        'serial',
        key,
        at,
        reason,
        issued ? new Date(issued.not_after) : undefined,
      );
      return { tokens: 0, enrollments, ...(enrollmentId && { enrollmentId }) };
    });
  }

  async deniedSerials(now: Date): Promise<DeniedSerial[]> {
    const res = await this.pool.query<{ serial: string; reason: string }>(
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

  watchRevocations(onChange: () => void, pollMs = 2000): () => void {
    let stopped = false;
    let listener: pg.Client | undefined;
    let revision: number | undefined;
    // The poll is the backstop: it catches what a notification missed while the listener reconnected.
    let unreachable = false;
    const poll = async (): Promise<void> => {
      try {
        const now = await this.revocationRevision();
        // Back from an outage: anything may have changed meanwhile (even before a first baseline).
        if ((revision !== undefined && now !== revision) || unreachable) onChange();
        revision = now;
        unreachable = false;
      } catch {
        // the database is unreachable: what this replica has seen still applies; try again later
        unreachable = true;
      }
    };
    const listen = async (): Promise<void> => {
      if (stopped || listener) return;
      const client = new pg.Client({
        connectionString: this.url,
        application_name: `portolan ${this.replica} listen`,
      });
      client.on('error', () => undefined);
      client.on('end', () => {
        if (listener === client) listener = undefined;
      });
      client.on('notification', () => void poll());
      try {
        await client.connect();
        await client.query(`LISTEN ${REVOCATION_CHANNEL}`);
        if (stopped) await client.end();
        else listener = client;
      } catch {
        await client.end().catch(() => undefined);
      }
    };
    void poll();
    void listen();
    const timer = setInterval(() => {
      void poll();
      void listen();
    }, pollMs);
    timer.unref();
    return () => {
      stopped = true;
      clearInterval(timer);
      void listener?.end().catch(() => undefined);
      listener = undefined;
    };
  }

  async revocationRevision(): Promise<number> {
    const res = await this.pool.query<{ r: string | null }>('SELECT MAX(id) AS r FROM revocations');
    return Number(res.rows[0]?.r ?? 0);
  }

  async listRevocations(): Promise<RevocationRow[]> {
    const res = await this.pool.query<{
      kind: RevocationKind;
      subject: string;
      revoked_at: string;
      reason: string | null;
    }>('SELECT kind, subject, revoked_at, reason FROM revocations ORDER BY id DESC');
    return res.rows.map((r) => ({
      kind: r.kind,
      subject: r.subject,
      revokedAt: r.revoked_at,
      reason: r.reason,
    }));
  }

  async prune(now: Date, enrollmentsBefore: Date): Promise<{ enrollments: number; revocations: number }> {
    const enrollments = await this.pool.query('DELETE FROM enrollments WHERE started_at < $1', [
      enrollmentsBefore.toISOString(),
    ]);
    const revocations = await this.pool.query(
      'DELETE FROM revocations WHERE prune_after IS NOT NULL AND prune_after < $1',
      [now.toISOString()],
    );
    return { enrollments: enrollments.rowCount ?? 0, revocations: revocations.rowCount ?? 0 };
  }

  async heartbeat(startedAt: string, proxies: readonly string[], now = new Date()): Promise<void> {
    await this.pool.query(
      `INSERT INTO replicas (replica, started_at, heartbeat_at, proxies) VALUES ($1, $2, $3, $4)
       ON CONFLICT (replica) DO UPDATE SET started_at = $2, heartbeat_at = $3, proxies = $4`,
      [this.replica, startedAt, now.toISOString(), JSON.stringify(proxies)],
    );
    // Replicas gone for a day (each restart with the default HOST-PID id adds a row): forgotten.
    await this.pool.query('DELETE FROM replicas WHERE heartbeat_at < $1', [
      new Date(now.getTime() - DAY_MS).toISOString(),
    ]);
  }

  async listReplicas(): Promise<ReplicaHeartbeat[]> {
    const res = await this.pool.query<{
      replica: string;
      started_at: string;
      heartbeat_at: string;
      proxies: string;
    }>('SELECT * FROM replicas ORDER BY heartbeat_at DESC');
    return res.rows.map((r) => ({
      replica: r.replica,
      startedAt: r.started_at,
      heartbeatAt: r.heartbeat_at,
      proxies: JSON.parse(r.proxies) as string[],
    }));
  }

  /** Writes an auto-registration held by this replica (it owns the row from now on). */
  async putAutoRegistration(key: string, registration: string, now = new Date()): Promise<void> {
    await this.pool.query(
      `INSERT INTO auto_registrations (key, registration, replica, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (key) DO UPDATE SET registration = $2, replica = $3, updated_at = $4`,
      [key, registration, this.replica, now.toISOString()],
    );
  }

  /**
   * Writes a registry's snapshot rows in one transaction: `all` first deletes its rows, then
   * `rows` are upserted (null service and endpoints: the host is deleted). Last writer wins.
   */
  async saveRegistryHosts(
    registry: string,
    rows: readonly RegistryHostRow[],
    all: boolean,
    syncedAt: string,
  ): Promise<void> {
    await this.transaction(async (client) => {
      if (all) await client.query('DELETE FROM registry_hosts WHERE registry = $1', [registry]);
      for (const row of rows) {
        if (row.service === null && row.endpoints === null)
          await client.query('DELETE FROM registry_hosts WHERE registry = $1 AND host = $2', [
            registry,
            row.host,
          ]);
        else
          await client.query(
            `INSERT INTO registry_hosts (registry, host, service, endpoints) VALUES ($1, $2, $3, $4)
             ON CONFLICT (registry, host) DO UPDATE SET service = $3, endpoints = $4`,
            [registry, row.host, row.service, row.endpoints],
          );
      }
      await client.query(
        `INSERT INTO registry_snapshots (registry, synced_at, replica) VALUES ($1, $2, $3)
         ON CONFLICT (registry) DO UPDATE SET synced_at = $2, replica = $3`,
        [registry, syncedAt, this.replica],
      );
    });
  }

  /** Appends history rows in one transaction, then keeps the newest `limit`. */
  async insertHistory(rows: readonly HistoryEntry[], limit: number): Promise<void> {
    await this.transaction(async (client) => {
      for (const r of rows)
        await client.query(
          'INSERT INTO history (at, source, subject, event, detail, replica) VALUES ($1, $2, $3, $4, $5, $6)',
          [r.at, r.source, r.subject, r.event, r.detail, r.replica],
        );
      await client.query(
        'DELETE FROM history WHERE id <= (SELECT id FROM history ORDER BY id DESC OFFSET $1 LIMIT 1)',
        [limit],
      );
    });
  }

  /** Every replica's newest history rows, newest first. */
  async recentHistory(limit: number): Promise<HistoryEntry[]> {
    const res = await this.pool.query<HistoryEntry>(
      'SELECT at, source, subject, event, detail, replica FROM history ORDER BY at DESC, id DESC LIMIT $1',
      [limit],
    );
    return res.rows;
  }

  /** Every registry's stored snapshot rows, with when (and by which replica) they were synced. */
  async loadRegistrySnapshots(): Promise<
    { registry: string; syncedAt: string; replica: string; rows: RegistryHostRow[] }[]
  > {
    const heads = await this.pool.query<{ registry: string; synced_at: string; replica: string }>(
      'SELECT registry, synced_at, replica FROM registry_snapshots ORDER BY registry',
    );
    const hosts = await this.pool.query<RegistryHostRow & { registry: string }>(
      'SELECT registry, host, service, endpoints FROM registry_hosts ORDER BY registry, host',
    );
    return heads.rows.map((head) => ({
      registry: head.registry,
      syncedAt: head.synced_at,
      replica: head.replica,
      rows: hosts.rows
        .filter((row) => row.registry === head.registry)
        .map(({ host, service, endpoints }) => ({ host, service, endpoints })),
    }));
  }

  /** Deletes an auto-registration if this replica still owns it (another may have taken it over). */
  async deleteAutoRegistration(key: string): Promise<void> {
    await this.pool.query('DELETE FROM auto_registrations WHERE key = $1 AND replica = $2', [
      key,
      this.replica,
    ]);
  }

  async listAutoRegistrations(): Promise<{ key: string; value: string; replica: string }[]> {
    const res = await this.pool.query<{ key: string; value: string; replica: string }>(
      'SELECT key, registration AS value, replica FROM auto_registrations ORDER BY key LIMIT 100000',
    );
    return res.rows;
  }

  /**
   * The leader's grace cleanup: the rows of replicas whose heartbeat is older than `graceMs` (dead,
   * so their own timers died with them), and rows older than their live owner's start (a previous
   * run's, which it no longer holds) once they are `graceMs` old. Returns how many went.
   */
  async expireAutoRegistrations(graceMs: number, now = new Date()): Promise<number> {
    const cutoff = new Date(now.getTime() - graceMs).toISOString();
    const res = await this.pool.query(
      `DELETE FROM auto_registrations a
       WHERE NOT EXISTS (
         SELECT 1 FROM replicas r
         WHERE r.replica = a.replica AND r.heartbeat_at >= $1 AND (a.updated_at >= r.started_at OR a.updated_at >= $1)
       )`,
      [cutoff],
    );
    return res.rowCount ?? 0;
  }

  lead(job: string, onChange: (leading: boolean) => void = () => undefined, retryMs = 2000): Leadership {
    return leadJob(this.url, this.replica, job, onChange, retryMs);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** Adds a deny-list entry tagged with this replica, and announces it to every replica at commit. */
  private async insertRevocation(
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
      [kind, subject, at, reason ?? null, pruneAfter?.toISOString() ?? null, this.replica],
    );
    await client.query('SELECT pg_notify($1, $2)', [REVOCATION_CHANNEL, kind]);
  }

  private async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}

async function revokeEnrollments(
  client: pg.PoolClient,
  column: 'id' | 'identity' | 'token_id',
  value: string,
  at: string,
  reason: string,
): Promise<number> {
  const res = await client.query(
    `UPDATE enrollments SET revoked_at = $1, revoked_reason = $2 WHERE ${column} = $3 AND revoked_at IS NULL`,
    [at, reason, value],
  );
  return res.rowCount ?? 0;
}

async function readVersion(db: pg.Pool | pg.PoolClient): Promise<number> {
  const res = await db.query<{ version: number }>('SELECT version FROM portolan_schema');
  return res.rows[0]?.version ?? 0;
}

/**
 * Applies the missing migrations, one transaction each, holding a session advisory lock so that
 * replicas starting at once apply each migration once: the others wait, then find them done.
 */
async function migrate(
  pool: pg.Pool,
  migrations: readonly string[],
  target: number,
  known: number,
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()]);
    try {
      await client.query(
        'CREATE TABLE IF NOT EXISTS portolan_schema (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)',
      );
      await client.query('INSERT INTO portolan_schema (version) VALUES (0) ON CONFLICT DO NOTHING');
      for (;;) {
        const current = await readVersion(client);
        if (current > known)
          throw new Error(
            `database schema version ${current} is newer than this Portolan understands (${known}); upgrade Portolan or use another database`,
          );
        if (current >= target) return;
        await client.query('BEGIN');
        try {
          await client.query(migrations[current] ?? '');
          await client.query('UPDATE portolan_schema SET version = $1', [current + 1]);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}

/** The URL without its password, for messages. */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable store URL)';
  }
}
