// The registries' last-good snapshots in PostgreSQL, one row per hostname (JSON as
// store/snapshot-codec.ts writes it) and one head row per registry saying when, and by which replica,
// it was synced. Written by snapshot-mirror.ts; read at a warm start.
import type { PgDb } from './pg-db.js';

/** One hostname of a registry snapshot. */
export interface RegistryHostRow {
  readonly host: string;
  readonly service: string | null;
  readonly endpoints: string | null;
}

export interface StoredRegistrySnapshot {
  readonly registry: string;
  readonly syncedAt: string;
  readonly replica: string;
  readonly rows: RegistryHostRow[];
}

export class PgRegistryHosts {
  constructor(private readonly db: PgDb) {}

  /**
   * Writes a registry's snapshot rows in one transaction: `all` first deletes its rows, then
   * `rows` are upserted (null service and endpoints: the host is deleted). Last writer wins.
   */
  async save(
    registry: string,
    rows: readonly RegistryHostRow[],
    all: boolean,
    syncedAt: string,
  ): Promise<void> {
    await this.db.transaction(async (client) => {
      if (all) await client.query('DELETE FROM registry_hosts WHERE registry = $1', [registry]);
      for (const row of rows) {
        if (row.service === null && row.endpoints === null)
          await client.query('DELETE FROM registry_hosts WHERE registry = $1 AND host = $2', [
            registry,
            row.host,
          ]);
        else
          await client.query(
            `INSERT INTO registry_hosts (registry, host, service, endpoints) VALUES ($1, $2, $3, $4)
             ON CONFLICT (registry, host) DO UPDATE SET service = $3, endpoints = $4`,
            [registry, row.host, row.service, row.endpoints],
          );
      }
      await client.query(
        `INSERT INTO registry_snapshots (registry, synced_at, replica) VALUES ($1, $2, $3)
         ON CONFLICT (registry) DO UPDATE SET synced_at = $2, replica = $3`,
        [registry, syncedAt, this.db.replica],
      );
    });
  }

  /** Every registry's stored snapshot rows, with when (and by which replica) they were synced. */
  async load(): Promise<StoredRegistrySnapshot[]> {
    const heads = await this.db.pool.query<{ registry: string; synced_at: string; replica: string }>(
      'SELECT registry, synced_at, replica FROM registry_snapshots ORDER BY registry',
    );
    const hosts = await this.db.pool.query<RegistryHostRow & { registry: string }>(
      'SELECT registry, host, service, endpoints FROM registry_hosts ORDER BY registry, host',
    );
    return heads.rows.map((head) => ({
      registry: head.registry,
      syncedAt: head.synced_at,
      replica: head.replica,
      rows: hosts.rows
        .filter((row) => row.registry === head.registry)
        .map(({ host, service, endpoints }) => ({ host, service, endpoints })),
    }));
  }
}
