// What changed and when: config-directory files accepted, rejected or removed (with the last
// accepted text of each file, so a restart can fall back to it), and registry sync events. Bounded:
// each table keeps its newest `limit` rows.
import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { Retention } from './retention.js';
import type { GuardWrite } from './snapshots.js';

export type ConfigOutcome = 'accepted' | 'rejected' | 'removed';
export type RegistryEventKind = 'synced' | 'failed' | 'restored';

export interface HistoryEntry {
  readonly at: string;
  readonly source: 'config' | 'registry';
  /** The file (config) or registry name. */
  readonly subject: string;
  /** accepted / rejected / removed, or synced / failed / restored. */
  readonly event: string;
  readonly detail: string;
}

export class HistoryTables {
  private readonly retention: Retention;

  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
    limit: number,
  ) {
    this.retention = new Retention(db, ['config_history', 'registry_events'], limit);
  }

  recordConfig(
    file: string,
    outcome: ConfigOutcome,
    details: { text?: string; resources?: readonly string[]; error?: string },
  ): void {
    const at = new Date().toISOString();
    const hash = details.text === undefined ? null : hashText(details.text);
    this.guard(`config history of ${file}`, () =>
      this.db.transaction(() => {
        this.db
          .prepare(
            'INSERT INTO config_history (at, file, outcome, content_hash, resources, error) VALUES (?, ?, ?, ?, ?, ?)',
          )
          .run(at, file, outcome, hash, JSON.stringify(details.resources ?? []), details.error ?? null);
        if (outcome === 'accepted' && details.text !== undefined) {
          this.db
            .prepare(
              `INSERT INTO config_files (path, text, content_hash, accepted_at) VALUES (?, ?, ?, ?)
               ON CONFLICT (path) DO UPDATE SET text = excluded.text, content_hash = excluded.content_hash,
                 accepted_at = excluded.accepted_at`,
            )
            .run(file, details.text, hash, at);
        }
        if (outcome === 'removed') this.db.prepare('DELETE FROM config_files WHERE path = ?').run(file);
        this.retention.inserted();
      })(),
    );
  }

  /** The last accepted text of a config file, if any. */
  lastAcceptedText(file: string): string | undefined {
    return this.db
      .prepare<[string], { text: string }>('SELECT text FROM config_files WHERE path = ?')
      .get(file)?.text;
  }

  recordRegistry(registry: string, event: RegistryEventKind, detail = ''): void {
    this.guard(`registry event of ${registry}`, () =>
      this.db.transaction(() => {
        this.db
          .prepare('INSERT INTO registry_events (at, registry, event, detail) VALUES (?, ?, ?, ?)')
          .run(new Date().toISOString(), registry, event, detail);
        this.retention.inserted();
      })(),
    );
  }

  /** The newest entries of both kinds, newest first. */
  recent(limit = 100): HistoryEntry[] {
    return this.db
      .prepare<[number], HistoryEntry>(
        `SELECT at, source, subject, event, detail FROM (
           SELECT id, at, 'config' AS source, file AS subject, outcome AS event,
                  COALESCE(error, resources) AS detail FROM config_history
           UNION ALL
           SELECT id, at, 'registry' AS source, registry AS subject, event, COALESCE(detail, '') AS detail
             FROM registry_events)
         ORDER BY at DESC, id DESC LIMIT ?`,
      )
      .all(limit);
  }
}

function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}
