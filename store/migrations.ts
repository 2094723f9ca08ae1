// The store's schema, as an append-only list of migrations. PRAGMA user_version records how many
// have been applied; a database from a newer Portolan (more migrations than we know) is refused.

export const MIGRATIONS: readonly string[] = [
  // 1: last good registry snapshots, accepted config files, and history.
  `CREATE TABLE registry_snapshots (
     registry TEXT PRIMARY KEY,
     snapshot TEXT NOT NULL,          -- JSON, see snapshot-codec.ts
     content_hash TEXT NOT NULL,
     synced_at TEXT NOT NULL
   );
   CREATE TABLE config_files (
     path TEXT PRIMARY KEY,           -- relative to the config directory
     text TEXT NOT NULL,              -- the last version that was accepted
     content_hash TEXT NOT NULL,
     accepted_at TEXT NOT NULL
   );
   CREATE TABLE config_history (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     at TEXT NOT NULL,
     file TEXT NOT NULL,
     outcome TEXT NOT NULL CHECK (outcome IN ('accepted', 'rejected', 'removed')),
     content_hash TEXT,
     resources TEXT NOT NULL,         -- JSON array of Kind/namespace/name
     error TEXT
   );
   CREATE TABLE registry_events (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     at TEXT NOT NULL,
     registry TEXT NOT NULL,
     event TEXT NOT NULL CHECK (event IN ('synced', 'failed', 'restored')),
     detail TEXT
   );`,
  // 2: proxy connection history, and the CA's material and issued-certificate log.
  `CREATE TABLE proxy_connections (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     node_id TEXT NOT NULL,
     peer TEXT NOT NULL,
     kind TEXT NOT NULL,
     connected_at TEXT NOT NULL,
     disconnected_at TEXT,
     last_acks TEXT NOT NULL DEFAULT '{}',   -- JSON: type -> {version, at}
     last_nacks TEXT NOT NULL DEFAULT '{}'   -- JSON: type -> {version, nonce, message, at}
   );
   CREATE INDEX proxy_connections_node ON proxy_connections (node_id);
   CREATE TABLE ca_material (
     name TEXT PRIMARY KEY,
     value BLOB NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE TABLE issued_certificates (
     serial TEXT PRIMARY KEY,
     identity TEXT NOT NULL,
     node_id TEXT,
     not_before TEXT NOT NULL,
     not_after TEXT NOT NULL,
     issued_at TEXT NOT NULL
   );`,
  // 3: the CA's join tokens, kept only as hashes.
  `CREATE TABLE join_tokens (
     id TEXT PRIMARY KEY,             -- the public part of the token, for listing and revoking
     hash TEXT NOT NULL UNIQUE,       -- sha256 of the whole token, hex
     identity TEXT NOT NULL,          -- the SPIFFE URI the token vouches for
     expires_at TEXT NOT NULL,
     uses_left INTEGER NOT NULL,
     revoked_at TEXT,
     created_at TEXT NOT NULL
   );`,
  // 4: enrollments (the chain of certificates descending from one join token), the revocation deny
  // list, and issued_certificates rebuilt with a row id (pruned like the history) and the enrollment
  // each certificate belongs to (how a renewal finds it).
  `CREATE TABLE enrollments (
     id TEXT PRIMARY KEY,             -- random hex; issued_certificates.enrollment_id points here
     identity TEXT NOT NULL,
     token_id TEXT,                   -- the join token that started it; NULL: adopted from a certificate issued before enrollments
     started_at TEXT NOT NULL,        -- renewals stop at started_at + --max-enrollment-age
     revoked_at TEXT,
     revoked_reason TEXT
   );
   CREATE INDEX enrollments_token ON enrollments (token_id);
   CREATE INDEX enrollments_identity ON enrollments (identity);
   CREATE TABLE revocations (
     id INTEGER PRIMARY KEY AUTOINCREMENT,  -- its maximum is the deny list's revision, which serve polls
     kind TEXT NOT NULL CHECK (kind IN ('serial', 'identity', 'token')),
     subject TEXT NOT NULL,           -- a serial (lower-case hex), a SPIFFE URI, or a token id
     revoked_at TEXT NOT NULL,
     reason TEXT,
     prune_after TEXT                 -- when the entry can no longer match a valid certificate; NULL: kept
   );
   CREATE TABLE issued_certificates_v4 (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     serial TEXT NOT NULL UNIQUE,
     identity TEXT NOT NULL,
     node_id TEXT,
     enrollment_id TEXT,              -- NULL: issued before enrollments (adopted at its next renewal)
     not_before TEXT NOT NULL,
     not_after TEXT NOT NULL,
     issued_at TEXT NOT NULL
   );
   INSERT INTO issued_certificates_v4 (serial, identity, node_id, not_before, not_after, issued_at)
     SELECT serial, identity, node_id, not_before, not_after, issued_at FROM issued_certificates ORDER BY issued_at;
   DROP TABLE issued_certificates;
   ALTER TABLE issued_certificates_v4 RENAME TO issued_certificates;
   CREATE INDEX issued_certificates_enrollment ON issued_certificates (enrollment_id);`,

  // 5: VMs registered through their agent (WorkloadGroup auto-registration), kept across restarts.
  `CREATE TABLE auto_registrations (
     key TEXT PRIMARY KEY,            -- namespace/entry-name
     registration TEXT NOT NULL,      -- JSON, see registration/entry.ts
     updated_at TEXT NOT NULL
   );`,

  // 6: a registry's snapshot as one row per hostname, so a save writes the hosts that changed
  // (snapshots.ts); registry_snapshots then holds only {"format":2} and the sync time.
  `CREATE TABLE registry_hosts (
     registry TEXT NOT NULL,
     host TEXT NOT NULL,
     service TEXT,                    -- JSON Service, see snapshot-codec.ts; NULL: endpoints only
     endpoints TEXT,                  -- JSON Endpoint[]; NULL: a service without an endpoint list
     PRIMARY KEY (registry, host)
   ) WITHOUT ROWID;`,

  // 7: each history row names the replica that wrote it (serve --replica-id); '' for rows written
  // before replicas were named.
  `ALTER TABLE config_history ADD COLUMN replica TEXT NOT NULL DEFAULT '';
   ALTER TABLE registry_events ADD COLUMN replica TEXT NOT NULL DEFAULT '';`,

  // 8: config generations (config-dir/generations.ts): the one each config row's file step
  // published, and the last one published (a restart numbers on from it, even past the rows kept).
  `ALTER TABLE config_history ADD COLUMN generation INTEGER;
   CREATE TABLE config_generation (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     generation INTEGER NOT NULL
   );`,

  // 9: what each accepted config file loaded to (store/config-loads.ts), for a restart.
  `CREATE TABLE config_loads (
     path TEXT PRIMARY KEY,           -- relative to the config directory
     content_hash TEXT NOT NULL,      -- of the text it loaded (config_files.content_hash)
     format TEXT NOT NULL,            -- the build that loaded it (config-dir/stored-load.ts)
     load TEXT NOT NULL               -- JSON: resources and warnings
   );`,
];
