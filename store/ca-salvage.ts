// `--reset-store` on a damaged database: the CA's state is read out of it (each table whole, or the
// reset is refused) and written into the new database, so a reset never silently makes a new CA
// root. Everything else in the store (snapshots, history) is disposable: it comes back from the
// registries and the config directory.
import Database from 'better-sqlite3';

/** The tables that make up the CA: losing one means a new root, or VMs that must enroll again. */
const REQUIRED = ['ca_material', 'join_tokens', 'enrollments', 'revocations'] as const;
/** Kept when readable: the issuance log (it maps a serial to its enrollment for `cert revoke --serial`). */
const OPTIONAL = ['issued_certificates'] as const;

export type CaState = Record<string, Record<string, unknown>[]>;

/** Reads the CA's tables from a damaged database; throws when one that exists cannot be read. */
export function salvageCaState(path: string): CaState {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const tables = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((r) => r.name),
    );
    const state: CaState = {};
    for (const table of REQUIRED) {
      if (tables.has(table))
        state[table] = db.prepare(`SELECT * FROM ${table}`).all() as Record<string, unknown>[];
    }
    for (const table of OPTIONAL) {
      if (!tables.has(table)) continue;
      try {
        state[table] = db.prepare(`SELECT * FROM ${table}`).all() as Record<string, unknown>[];
      } catch {
        // a log: the certificates themselves stay valid without it
      }
    }
    return state;
  } finally {
    db.close();
  }
}

/** Writes salvaged rows into a freshly migrated database (the columns both schemas have). */
export function restoreCaState(db: Database.Database, state: CaState): void {
  db.transaction(() => {
    for (const [table, rows] of Object.entries(state)) {
      const columns = new Set(
        db
          .prepare<[], { name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
          .all()
          .map((c) => c.name),
      );
      for (const row of rows) {
        const names = Object.keys(row).filter((c) => columns.has(c));
        const sql = `INSERT OR IGNORE INTO ${table} (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`;
        db.prepare(sql).run(...names.map((n) => row[n]));
      }
    }
  })();
}
