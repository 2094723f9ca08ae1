// The config directory's files as they loaded (model/accepted-files.ts): one row per file, beside its
// last accepted text (config_files), tied to that text by its hash and to the build that loaded it by
// `format`. A row whose hash or format does not match is ignored (the file is parsed), so a lost or
// late write costs a parse at the next start, never a wrong version.
import type Database from 'better-sqlite3';
import type { AcceptedFile, AcceptedFiles } from '../model/accepted-files.js';
import { sha256 } from '../model/sha256.js';
import { prepared } from './prepared.js';
import type { SharedConfigLoad } from './shared-store.js';
import type { GuardWrite } from './snapshots.js';
import type { WriteBehind } from './write-behind.js';

export class ConfigLoadTable implements AcceptedFiles {
  constructor(
    private readonly db: Database.Database,
    private readonly writes: WriteBehind,
    private readonly guard: GuardWrite,
  ) {}

  /** The rows made by `format`, by path, at most `limit` (the SharedConfigLoads seam, sqlite-shared.ts). */
  rowsOf(format: string, limit: number): Map<string, SharedConfigLoad> {
    this.writes.flush();
    const rows = prepared<[string, number], { path: string; content_hash: string; load: string }>(
      this.db,
      'SELECT path, content_hash, load FROM config_loads WHERE format = ? ORDER BY path LIMIT ?',
    ).all(format, limit);
    return new Map(
      rows.map((r) => [r.path, { path: r.path, contentHash: r.content_hash, format, load: r.load }]),
    );
  }

  /** Upserts `rows` and deletes `removed` now, in one transaction; false if that failed (logged). */
  writeRows(rows: readonly SharedConfigLoad[], removed: readonly string[]): boolean {
    this.writes.flush();
    const written = this.guard('config loads', () => {
      this.db.transaction(() => {
        for (const r of rows) this.upsert(r.path, r.contentHash, r.format, r.load);
        for (const path of removed) prepared(this.db, 'DELETE FROM config_loads WHERE path = ?').run(path);
      })();
      return true;
    });
    return written === true;
  }

  all(format: string): ReadonlyMap<string, AcceptedFile> | undefined {
    // Pending history rows first: config_files must be as recorded.
    this.writes.flush();
    try {
      const rows = prepared<[string], { path: string; text: string; load: string | null }>(
        this.db,
        `SELECT f.path, f.text, l.load FROM config_files f
           LEFT JOIN config_loads l ON l.path = f.path AND l.content_hash = f.content_hash AND l.format = ?`,
      ).all(format);
      return new Map(rows.map((r) => [r.path, { text: r.text, load: r.load ?? undefined }]));
    } catch {
      return undefined; // a database not migrated this far (read-only opens): per file, as before
    }
  }

  recordLoad(path: string, text: string, format: string, load: string): void {
    const hash = contentHash(text);
    this.writes.defer({ what: `config load of ${path}`, write: () => this.upsert(path, hash, format, load) });
  }

  private upsert(path: string, hash: string, format: string, load: string): void {
    prepared(
      this.db,
      `INSERT INTO config_loads (path, content_hash, format, load) VALUES (?, ?, ?, ?)
         ON CONFLICT (path) DO UPDATE SET content_hash = excluded.content_hash,
           format = excluded.format, load = excluded.load`,
    ).run(path, hash, format, load);
  }

  removeLoad(path: string): void {
    this.writes.defer({
      what: `config load of ${path}`,
      write: () => prepared(this.db, 'DELETE FROM config_loads WHERE path = ?').run(path),
    });
  }
}

/** The hash config_files keeps of a text (store/history.ts). */
export function contentHash(text: string): string {
  return sha256(text, 'hex').slice(0, 32);
}
