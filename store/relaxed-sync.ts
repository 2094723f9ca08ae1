// Commits that need not be fsynced. In WAL mode, `synchronous = NORMAL` skips a commit's fsync (the
// next FULL commit or checkpoint syncs it): a crash of the process loses nothing, power loss at
// most the last such commits, and the database stays consistent either way. History rows and
// registry snapshots (a cache of what the registries said; the live sync corrects it) are written
// so; the CA's writes (tokens spent, certificates issued) keep the connection's FULL.
import type Database from 'better-sqlite3';
import { prepared } from './prepared.js';

/** Runs `write` at `synchronous = NORMAL`, then restores the connection's level. */
export function withoutSync<T>(db: Database.Database, write: () => T): T {
  // Inside a transaction the level cannot change; the enclosing commit decides.
  if (db.inTransaction) return write();
  // Prepared once (db.pragma() compiles its statement on every call, three per write here).
  const before = Number(prepared<[], number>(db, 'PRAGMA synchronous').pluck().get());
  prepared(db, 'PRAGMA synchronous = NORMAL').run();
  try {
    return write();
  } finally {
    prepared(db, `PRAGMA synchronous = ${LEVELS[before] ?? 'FULL'}`).run();
  }
}

/** PRAGMA synchronous's levels by the number it reads back as. */
const LEVELS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'] as const;
