// Commits that need not be fsynced. In WAL mode, `synchronous = NORMAL` skips a commit's fsync (the
// next FULL commit or checkpoint syncs it): a crash of the process loses nothing, power loss at
// most the last such commits, and the database stays consistent either way. History rows and
// registry snapshots (a cache of what the registries said; the live sync corrects it) are written
// so; the CA's writes (tokens spent, certificates issued) keep the connection's FULL.
import type Database from 'better-sqlite3';

/** Runs `write` at `synchronous = NORMAL`, then restores the connection's level. */
export function withoutSync<T>(db: Database.Database, write: () => T): T {
  // Inside a transaction the level cannot change; the enclosing commit decides.
  if (db.inTransaction) return write();
  const before = db.pragma('synchronous', { simple: true });
  db.pragma('synchronous = NORMAL');
  try {
    return write();
  } finally {
    db.pragma(`synchronous = ${Number(before)}`);
  }
}
