// The PostgreSQL schema, as an append-only list of migrations like SQLite's (store/migrations.ts),
// reaching the same tables in PostgreSQL's dialect. `portolan_schema.version` records how many have
// been applied; a database from a newer Portolan is refused, naming both versions.

export const PG_MIGRATIONS: readonly string[] = [
  // 1: the state replicas share: CA material, issued certificates, join tokens, enrollments,
  // revocations (each row's id is the deny list's revision, which replicas poll).
  `CREATE TABLE ca_material (
     name TEXT PRIMARY KEY,
     value BYTEA NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE TABLE issued_certificates (
     id BIGSERIAL PRIMARY KEY,
     serial TEXT NOT NULL UNIQUE,
     identity TEXT NOT NULL,
     node_id TEXT,
     enrollment_id TEXT,
     not_before TEXT NOT NULL,
     not_after TEXT NOT NULL,
     issued_at TEXT NOT NULL,
     replica TEXT NOT NULL
   );
   CREATE INDEX issued_certificates_enrollment ON issued_certificates (enrollment_id);
   CREATE TABLE join_tokens (
     id TEXT PRIMARY KEY,
     hash TEXT NOT NULL UNIQUE,
     identity TEXT NOT NULL,
     expires_at TEXT NOT NULL,
     uses_left INTEGER NOT NULL,
     revoked_at TEXT,
     created_at TEXT NOT NULL
   );
   CREATE TABLE enrollments (
     id TEXT PRIMARY KEY,
     identity TEXT NOT NULL,
     token_id TEXT,
     started_at TEXT NOT NULL,
     revoked_at TEXT,
     revoked_reason TEXT
   );
   CREATE INDEX enrollments_token ON enrollments (token_id);
   CREATE INDEX enrollments_identity ON enrollments (identity);
   CREATE TABLE revocations (
     id BIGSERIAL PRIMARY KEY,
     kind TEXT NOT NULL CHECK (kind IN ('serial', 'identity', 'token')),
     subject TEXT NOT NULL,
     revoked_at TEXT NOT NULL,
     reason TEXT,
     prune_after TEXT,
     replica TEXT NOT NULL
   );`,
  // 2: replica heartbeats, for /debug/replicas.
  `CREATE TABLE replicas (
     replica TEXT PRIMARY KEY,
     started_at TEXT NOT NULL,
     heartbeat_at TEXT NOT NULL,
     proxies TEXT NOT NULL DEFAULT '[]'   -- JSON array of node ids connected at the last heartbeat
   );`,

  // 3: a registry's snapshot as one row per hostname, as SQLite's migration 6 (store/migrations.ts),
  // for when registry snapshots are kept here too.
  `CREATE TABLE registry_hosts (
     registry TEXT NOT NULL,
     host TEXT NOT NULL,
     service TEXT,
     endpoints TEXT,
     PRIMARY KEY (registry, host)
   );`,

  // 4: VMs auto-registered through their agents (registration/auto-registration.ts), one row per
  // entry, owned by the replica the agent is connected to; every replica serves them all. The
  // owner's grace timer deletes its rows; the leader deletes those of a replica that died.
  `CREATE TABLE auto_registrations (
     key TEXT PRIMARY KEY,
     registration TEXT NOT NULL,
     replica TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );`,

  // 5: when each registry's rows in registry_hosts were last synced live, and by which replica
  // (snapshot-mirror.ts): the warm-start source of a replica whose registries are unreachable.
  `CREATE TABLE registry_snapshots (
     registry TEXT PRIMARY KEY,
     synced_at TEXT NOT NULL,
     replica TEXT NOT NULL
   );`,

  // 6: config changes and registry events of every replica, each row naming the replica that
  // wrote it (history-mirror.ts); `portolan history --store` reads it.
  `CREATE TABLE history (
     id BIGSERIAL PRIMARY KEY,
     at TEXT NOT NULL,
     source TEXT NOT NULL,
     subject TEXT NOT NULL,
     event TEXT NOT NULL,
     detail TEXT NOT NULL,
     replica TEXT NOT NULL
   );
   CREATE INDEX history_at ON history (at);`,

  // 7: a config row's config generation (config-dir/generations.ts), per replica; NULL for
  // registry events and older rows.
  `ALTER TABLE history ADD COLUMN generation BIGINT;`,

  // 8: what a config file's text loaded to (store/postgres/config-loads.ts), as SQLite's migration
  // 9 keeps it, shared: a replica starting with an empty --data-dir takes a file whose text (by its
  // hash) another replica loaded, with the same build (`format`), without a parse. A cache only:
  // nothing here is a version in force, and a row that does not match is ignored.
  `CREATE TABLE config_loads (
     path TEXT PRIMARY KEY,
     content_hash TEXT NOT NULL,
     format TEXT NOT NULL,
     load TEXT NOT NULL,
     replica TEXT NOT NULL
   );`,
];
