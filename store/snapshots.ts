// The last good snapshot of each registry: one row per registry, replaced whole in one transaction,
// so a crash leaves either the previous snapshot or the new one, never a mix. saveHosts() keeps it
// as one row per hostname instead (registry_hosts), writing only the hosts that changed, again in
// one transaction with the registry's row.
import type Database from 'better-sqlite3';
import type { RegistrySnapshot } from '../model/change.js';
import {
  decodeHosts,
  decodeSnapshot,
  encodeSnapshot,
  isPerHost,
  json,
  PER_HOST_FORMAT,
} from './snapshot-codec.js';
import { prepared } from './prepared.js';
import { withoutSync } from './relaxed-sync.js';

export type GuardWrite = <T>(what: string, fn: () => T) => T | undefined;

export interface StoredRegistrySnapshot {
  readonly registry: string;
  readonly snapshot: RegistrySnapshot;
  readonly syncedAt: string;
  readonly hash: string;
  /** Kept as one row per hostname (saveHosts), which a save of the hosts that changed builds on. */
  readonly perHost: boolean;
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
        const existing = prepared<[string], { content_hash: string }>(
          this.db,
          'SELECT content_hash FROM registry_snapshots WHERE registry = ?',
        ).get(registry);
        if (existing?.content_hash === hash) return false;
        prepared(
          this.db,
          `INSERT INTO registry_snapshots (registry, snapshot, content_hash, synced_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (registry) DO UPDATE SET snapshot = excluded.snapshot,
             content_hash = excluded.content_hash, synced_at = excluded.synced_at`,
        ).run(registry, text, hash, syncedAt);
        return true;
      }) ?? false
    );
  }

  /**
   * Saves a snapshot as one row per hostname: `hosts` names the hostnames that may differ from the
   * saved rows ('all': the rows are rewritten). One transaction, so a crash keeps the previous
   * state or the new one. False if the write failed.
   */
  saveHosts(
    registry: string,
    snapshot: RegistrySnapshot,
    hosts: Iterable<string> | 'all',
    syncedAt: string,
  ): boolean {
    // Prepared once (prepared.ts): a registry's changes are saved this way every few hundred ms.
    const upsert = prepared(
      this.db,
      `INSERT INTO registry_hosts (registry, host, service, endpoints) VALUES (?, ?, ?, ?)
       ON CONFLICT (registry, host) DO UPDATE SET service = excluded.service, endpoints = excluded.endpoints`,
    );
    const remove = prepared(this.db, 'DELETE FROM registry_hosts WHERE registry = ? AND host = ?');
    const write = (host: string): void => {
      const service = snapshot.services.get(host);
      const endpoints = snapshot.endpoints.get(host);
      if (service === undefined && endpoints === undefined) remove.run(registry, host);
      else
        upsert.run(
          registry,
          host,
          service === undefined ? null : json(service),
          endpoints === undefined ? null : json(endpoints),
        );
    };
    const save = this.db.transaction(() => {
      // Rows left from before a whole save() (which leaves them) are no base to write changes on.
      const current = prepared<[string], { snapshot: string }>(
        this.db,
        'SELECT snapshot FROM registry_snapshots WHERE registry = ?',
      ).get(registry);
      if (!current || !isPerHost(current.snapshot)) {
        prepared(this.db, 'DELETE FROM registry_hosts WHERE registry = ?').run(registry);
        for (const host of new Set([...snapshot.services.keys(), ...snapshot.endpoints.keys()])) write(host);
      } else if (hosts === 'all') {
        // Every host may differ (a run's first save): the rows are compared, and only those that
        // differ written. A restart that finds what it stored writes nothing but this registry's row
        // (10,000 rows rewritten at every start, before).
        const stored = new Map(
          prepared<[string], { host: string; service: string | null; endpoints: string | null }>(
            this.db,
            'SELECT host, service, endpoints FROM registry_hosts WHERE registry = ?',
          )
            .all(registry)
            .map((r) => [r.host, r]),
        );
        for (const host of new Set([...snapshot.services.keys(), ...snapshot.endpoints.keys()])) {
          const row = stored.get(host);
          stored.delete(host);
          const service = snapshot.services.get(host);
          const endpoints = snapshot.endpoints.get(host);
          if (
            row &&
            row.service === (service === undefined ? null : json(service)) &&
            row.endpoints === (endpoints === undefined ? null : json(endpoints))
          )
            continue;
          write(host);
        }
        for (const host of stored.keys()) remove.run(registry, host);
      } else {
        for (const host of hosts) write(host);
      }
      prepared(
        this.db,
        `INSERT INTO registry_snapshots (registry, snapshot, content_hash, synced_at) VALUES (?, ?, '', ?)
         ON CONFLICT (registry) DO UPDATE SET snapshot = excluded.snapshot,
           content_hash = excluded.content_hash, synced_at = excluded.synced_at`,
      ).run(registry, PER_HOST_FORMAT, syncedAt);
    });
    return this.guard(`snapshot of ${registry}`, () => (withoutSync(this.db, save), true)) ?? false;
  }

  load(registry: string): StoredRegistrySnapshot | undefined {
    const row = this.db
      .prepare<[string], Row>('SELECT * FROM registry_snapshots WHERE registry = ?')
      .get(registry);
    return row && this.toStored(row);
  }

  all(): StoredRegistrySnapshot[] {
    return this.db
      .prepare<[], Row>('SELECT * FROM registry_snapshots ORDER BY registry')
      .all()
      .map((row) => this.toStored(row));
  }

  private toStored(row: Row): StoredRegistrySnapshot {
    const perHost = isPerHost(row.snapshot);
    const snapshot = perHost
      ? decodeHosts(
          this.db
            .prepare<[string], { host: string; service: string | null; endpoints: string | null }>(
              'SELECT host, service, endpoints FROM registry_hosts WHERE registry = ? ORDER BY host',
            )
            .all(row.registry),
        )
      : decodeSnapshot(row.snapshot);
    return { registry: row.registry, snapshot, syncedAt: row.synced_at, hash: row.content_hash, perHost };
  }
}
