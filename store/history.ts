// What changed and when: config-directory files accepted, rejected or removed (with the last
// accepted text of each file, so a restart can fall back to it), and registry sync events. Bounded:
// each table keeps its newest `limit` rows.
//
// Rows are written behind (write-behind.ts): the ones recorded within a window go out together in one
// transaction, with a registry snapshot save that falls due meanwhile, off the path of the change that
// recorded them. Reads through this class see them at once; a crash loses at most the last window's
// rows and leaves the database consistent.
import type { HistoryChange } from '../model/admin-api.js';
import { sha256 } from '../model/sha256.js';
import type Database from 'better-sqlite3';
import { prepared } from './prepared.js';
import { Retention } from './retention.js';
import { WriteBehind } from './write-behind.js';
import type { GuardWrite } from './snapshots.js';

export { WRITE_WINDOW_MS } from './write-behind.js';

export type ConfigOutcome = 'accepted' | 'rejected' | 'removed';
export type RegistryEventKind = 'synced' | 'failed' | 'restored';

/**
 * One change in the history, as /debug/historyz shows it (one definition: model/admin-api.ts);
 * `replica` is '' before replicas were named, or on a database not yet migrated.
 */
export type HistoryEntry = HistoryChange;

/** Told of every history row as it is recorded (the shared store's copy); never blocks. */
export interface HistoryMirror {
  record(entry: HistoryEntry): void;
}

export class HistoryTables {
  private readonly retention: Retention;
  /** Accepted text (or null: removed) of files whose row is still pending, for lastAcceptedText. */
  private readonly pendingFiles = new Map<string, string | null>();
  private readonly tagged: boolean;
  /** Migration 8's column and table are there (see `tagged`). */
  private readonly numbered: boolean;
  /** The last generation recorded whose row is still pending. */
  private pendingGeneration: number | undefined;
  private mirror: HistoryMirror | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
    limit: number,
    private readonly replica = '',
    /** The store's one write-behind queue (its own, for a table used alone). */
    private readonly writes = new WriteBehind(db, guard),
  ) {
    this.retention = new Retention(db, ['config_history', 'registry_events'], limit);
    // A database opened without migrating (`portolan history`, tests' older schemas) may predate
    // migration 7's column: rows are then written and read untagged.
    this.tagged =
      db
        .prepare<[], { n: number }>(
          "SELECT COUNT(*) AS n FROM pragma_table_info('config_history') WHERE name = 'replica'",
        )
        .get()?.n === 1;
    this.numbered =
      db
        .prepare<[], { n: number }>(
          "SELECT COUNT(*) AS n FROM pragma_table_info('config_history') WHERE name = 'generation'",
        )
        .get()?.n === 1;
  }

  /** --store: every row recorded from now on is also handed to `mirror`. */
  mirrorTo(mirror: HistoryMirror): void {
    this.mirror = mirror;
  }

  recordConfig(
    file: string,
    outcome: ConfigOutcome,
    details: { text?: string; resources?: readonly string[]; error?: string; generation?: number },
  ): void {
    const at = new Date().toISOString();
    const generation = details.generation ?? null;
    const hash = details.text === undefined ? null : hashText(details.text);
    if (outcome === 'accepted' && details.text !== undefined) this.pendingFiles.set(file, details.text);
    if (outcome === 'removed') this.pendingFiles.set(file, null);
    this.mirror?.record({
      at,
      source: 'config',
      subject: file,
      event: outcome,
      detail: details.error ?? JSON.stringify(details.resources ?? []),
      replica: this.replica,
      generation,
    });
    const pendingText = this.pendingFiles.get(file);
    this.defer(`config history of ${file}`, () => {
      // Stored now: lastAcceptedText reads it from the table (unless a later row is still pending).
      if (this.pendingFiles.get(file) === pendingText) this.pendingFiles.delete(file);
      prepared(
        this.db,
        this.numbered
          ? 'INSERT INTO config_history (at, file, outcome, content_hash, resources, error, replica, generation) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'
          : this.tagged
            ? 'INSERT INTO config_history (at, file, outcome, content_hash, resources, error, replica) VALUES (?, ?, ?, ?, ?, ?, ?)'
            : 'INSERT INTO config_history (at, file, outcome, content_hash, resources, error) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(
        at,
        file,
        outcome,
        hash,
        JSON.stringify(details.resources ?? []),
        details.error ?? null,
        ...(this.tagged ? [this.replica] : []),
        ...(this.numbered ? [generation] : []),
      );
      if (outcome === 'accepted' && details.text !== undefined) {
        prepared(
          this.db,
          `INSERT INTO config_files (path, text, content_hash, accepted_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (path) DO UPDATE SET text = excluded.text, content_hash = excluded.content_hash,
               accepted_at = excluded.accepted_at`,
        ).run(file, details.text, hash, at);
      }
      if (outcome === 'removed') prepared(this.db, 'DELETE FROM config_files WHERE path = ?').run(file);
      this.retention.inserted();
    });
  }

  /** Writes every pending row now, in one transaction (before reading elsewhere, and on close). */
  flush(): void {
    this.writes.flush();
  }

  private defer(what: string, write: () => void): void {
    this.writes.defer({ what, write });
  }

  /** The last accepted text of a config file, if any. */
  lastAcceptedText(file: string): string | undefined {
    const pending = this.pendingFiles.get(file);
    if (pending !== undefined) return pending ?? undefined;
    return prepared<[string], { text: string }>(this.db, 'SELECT text FROM config_files WHERE path = ?').get(
      file,
    )?.text;
  }

  /** The highest config generation recorded (0: none, or a database not yet migrated). */
  lastGeneration(): number {
    if (!this.numbered) return 0;
    const row = prepared<[], { g: number | null }>(
      this.db,
      `SELECT MAX(g) AS g FROM (
         SELECT MAX(generation) AS g FROM config_history
         UNION ALL SELECT generation FROM config_generation WHERE id = 1)`,
    ).get();
    return Math.max(row?.g ?? 0, this.pendingGeneration ?? 0);
  }

  /** Records that `generation` was published (written behind, like the rows). */
  recordGeneration(generation: number): void {
    if (!this.numbered) return;
    this.pendingGeneration = generation;
    this.defer('config generation', () => {
      if (this.pendingGeneration === generation) this.pendingGeneration = undefined;
      prepared(
        this.db,
        `INSERT INTO config_generation (id, generation) VALUES (1, ?)
           ON CONFLICT (id) DO UPDATE SET generation = MAX(generation, excluded.generation)`,
      ).run(generation);
    });
  }

  recordRegistry(registry: string, event: RegistryEventKind, detail = ''): void {
    const at = new Date().toISOString();
    this.mirror?.record({
      at,
      source: 'registry',
      subject: registry,
      event,
      detail,
      replica: this.replica,
      generation: null,
    });
    this.defer(`registry event of ${registry}`, () => {
      prepared(
        this.db,
        this.tagged
          ? 'INSERT INTO registry_events (at, registry, event, detail, replica) VALUES (?, ?, ?, ?, ?)'
          : 'INSERT INTO registry_events (at, registry, event, detail) VALUES (?, ?, ?, ?)',
      ).run(at, registry, event, detail, ...(this.tagged ? [this.replica] : []));
      this.retention.inserted();
    });
  }

  /** The newest entries of both kinds, newest first. */
  recent(limit = 100): HistoryEntry[] {
    this.flush();
    const replica = this.tagged ? 'replica' : "''";
    const generation = this.numbered ? 'generation' : 'NULL';
    return prepared<[number], HistoryEntry>(
      this.db,
      `SELECT at, source, subject, event, detail, replica, generation FROM (
           SELECT id, at, 'config' AS source, file AS subject, outcome AS event,
                  COALESCE(error, resources) AS detail, ${replica} AS replica,
                  ${generation} AS generation FROM config_history
           UNION ALL
           SELECT id, at, 'registry' AS source, registry AS subject, event, COALESCE(detail, '') AS detail,
                  ${replica} AS replica, NULL AS generation
             FROM registry_events)
         ORDER BY at DESC, id DESC LIMIT ?`,
    ).all(limit);
  }
}

function hashText(text: string): string {
  return sha256(text, 'hex').slice(0, 32);
}
