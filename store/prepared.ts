// Statements compiled once per database and SQL text. better-sqlite3's prepare() compiles its SQL on
// every call, which on the per-change and per-stream paths (history rows, registry snapshot saves,
// connection rows, pruning) cost more than running the statement. Preparing lazily, on first use,
// keeps a read-only store from preparing writes. Bounded: the SQL texts are the code's own literals.
import type Database from 'better-sqlite3';

const caches = new WeakMap<Database.Database, Map<string, Database.Statement<unknown[], unknown>>>();

/** `db.prepare(sql)`, compiled on the first call for this database and reused after. */
export function prepared<P extends unknown[] = unknown[], R = unknown>(
  db: Database.Database,
  sql: string,
): Database.Statement<P, R> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map<string, Database.Statement<unknown[], unknown>>()));
  let statement = cache.get(sql);
  if (!statement) cache.set(sql, (statement = db.prepare(sql)));
  return statement as Database.Statement<P, R>;
}
