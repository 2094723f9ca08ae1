// The last good snapshot of each registry: one row per registry, replaced whole in one transaction,
// so a crash leaves either the previous snapshot or the new one, never a mix.
import type Database from 'better-sqlite3';
import type { RegistrySnapshot } from '../model/change.js';
import { decodeSnapshot, encodeSnapshot } from './snapshot-codec.js';

export type GuardWrite = <T>(what: string, fn: () => T) => T | undefined;

export interface StoredRegistrySnapshot {
  readonly registry: string;
  readonly snapshot: RegistrySnapshot;
  readonly syncedAt: string;
  readonly hash: string;
}

interface Row {
  registry: string;
  snapshot: string;
  content_hash: string;
  synced_at: string;
}

export class SnapshotTable {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
  ) {}

  /** Saves a snapshot; false if it was identical to the saved one (or the write failed). */
  save(registry: string, snapshot: RegistrySnapshot, syncedAt: string): boolean {
    const { text, hash } = encodeSnapshot(snapshot);
    return (
      this.guard(`snapshot of ${registry}`, () => {
        const existing = this.db
          .prepare<[string], { content_hash: string }>(
            'SELECT content_hash FROM registry_snapshots WHERE registry = ?',
          )
          .get(registry);
        if (existing?.content_hash === hash) return false;
        this.db
          .prepare(
            `INSERT INTO registry_snapshots (registry, snapshot, content_hash, synced_at) VALUES (?, ?, ?, ?)
             ON CONFLICT (registry) DO UPDATE SET snapshot = excluded.snapshot,
               content_hash = excluded.content_hash, synced_at = excluded.synced_at`,
          )
          .run(registry, text, hash, syncedAt);
        return true;
      }) ?? false
    );
  }

  load(registry: string): StoredRegistrySnapshot | undefined {
    const row = this.db
      .prepare<[string], Row>('SELECT * FROM registry_snapshots WHERE registry = ?')
      .get(registry);
    return row && toStored(row);
  }

  all(): StoredRegistrySnapshot[] {
    return this.db.prepare<[], Row>('SELECT * FROM registry_snapshots ORDER BY registry').all().map(toStored);
  }
}

function toStored(row: Row): StoredRegistrySnapshot {
  return {
    registry: row.registry,
    snapshot: decodeSnapshot(row.snapshot),
    syncedAt: row.synced_at,
    hash: row.content_hash,
  };
}
