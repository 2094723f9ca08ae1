// Tests that need to see when a better-sqlite3 transaction runs (how many commits; at which
// synchronous level): the store makes its transaction functions once, so the hook wraps each one made
// after it is installed.
import type Database from 'better-sqlite3';

/** Calls `note` as each transaction made from now on starts. */
export function onTransaction(db: Database.Database, note: () => void): void {
  const original = db.transaction.bind(db);
  db.transaction = ((fn: (...args: unknown[]) => unknown) => {
    const run = original(fn);
    return (...args: unknown[]) => {
      note();
      return run(...args);
    };
  }) as typeof db.transaction;
}
