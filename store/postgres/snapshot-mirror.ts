// Last-good registry snapshots in PostgreSQL (issue #20, docs/ha.md): every replica mirrors the
// snapshots it saves locally (registry-persistence.ts) to the shared registry_hosts rows, so a new
// replica whose registries are unreachable warm-starts from them. Writes are off the push path:
// `saved` only records what changed and one write per registry is in flight at a time, coalescing
// the saves made meanwhile. A failed write keeps its hostnames pending, so the next successful one
// writes everything changed since the last success; nothing in memory waits on or is lost to it.
import type { RegistrySnapshot } from '../../model/change.js';
import type { Logger } from '../../log/logger.js';
import { decodeHosts, json } from '../snapshot-codec.js';
import type { SnapshotTable } from '../snapshots.js';
import type { SnapshotMirror } from '../registry-persistence.js';
import type { PostgresStore } from './postgres-store.js';
import type { RegistryHostRow } from './registry-hosts.js';

/** A failed write is retried after this long (a save meanwhile retries sooner). */
const RETRY_MS = 2000;

interface Pending {
  snapshot: RegistrySnapshot;
  hosts: Set<string> | 'all';
  syncedAt: string;
}

export class PostgresSnapshotMirror implements SnapshotMirror {
  private readonly pending = new Map<string, Pending>();
  private readonly writing = new Set<string>();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly store: PostgresStore,
    private readonly logger: Logger,
  ) {}

  saved(
    registry: string,
    snapshot: RegistrySnapshot,
    hosts: Iterable<string> | 'all',
    syncedAt: string,
  ): void {
    if (this.stopped) return;
    const before = this.pending.get(registry);
    const merged: Set<string> | 'all' =
      hosts === 'all' || before?.hosts === 'all' ? 'all' : new Set([...(before?.hosts ?? []), ...hosts]);
    this.pending.set(registry, { snapshot, hosts: merged, syncedAt });
    void this.write(registry);
  }

  /** Resolves once every pending write has been tried (tests, shutdown). */
  async flush(): Promise<void> {
    for (const registry of [...this.pending.keys()]) await this.write(registry);
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.retries.values()) clearTimeout(timer);
    this.retries.clear();
  }

  private async write(registry: string): Promise<void> {
    if (this.writing.has(registry)) return;
    const job = this.pending.get(registry);
    if (!job) return;
    this.pending.delete(registry);
    this.writing.add(registry);
    clearTimeout(this.retries.get(registry));
    this.retries.delete(registry);
    try {
      const hosts =
        job.hosts === 'all'
          ? new Set([...job.snapshot.services.keys(), ...job.snapshot.endpoints.keys()])
          : job.hosts;
      await this.store.registryHosts.save(
        registry,
        rowsOf(job.snapshot, hosts),
        job.hosts === 'all',
        job.syncedAt,
      );
    } catch (err) {
      // Put the hostnames back under whatever was saved meanwhile (its snapshot is newer).
      const later = this.pending.get(registry);
      this.pending.set(registry, {
        snapshot: later?.snapshot ?? job.snapshot,
        syncedAt: later?.syncedAt ?? job.syncedAt,
        hosts:
          job.hosts === 'all' || later?.hosts === 'all'
            ? 'all'
            : new Set([...job.hosts, ...(later?.hosts ?? [])]),
      });
      this.logger.warn(
        { err, registry },
        'could not write the registry snapshot to the shared store; will retry',
      );
      if (!this.stopped)
        this.retries.set(registry, setTimeout(() => void this.write(registry), RETRY_MS).unref());
      return;
    } finally {
      this.writing.delete(registry);
    }
    if (this.pending.has(registry)) await this.write(registry);
  }
}

function rowsOf(snapshot: RegistrySnapshot, hosts: Iterable<string>): RegistryHostRow[] {
  return [...hosts].map((host) => {
    const service = snapshot.services.get(host);
    const endpoints = snapshot.endpoints.get(host);
    return {
      host,
      service: service === undefined ? null : json(service),
      endpoints: endpoints === undefined ? null : json(endpoints),
    };
  });
}

/**
 * Before a warm start: copies each shared snapshot synced later than the local one into the local
 * snapshot table, which the warm start then reads. Returns the registries copied. A database that
 * does not answer leaves the local snapshots as they are (logged). `later`: registries whose restore
 * waits on their own start (registry-persistence.ts DeferredRestore) are not compared nor copied
 * now (a start that succeeds never reads them: decoding and writing 10,000 hosts cost a replica's
 * start 0.4 s); their copy is put in `later`, to run only if that restore happens.
 */
export async function pullSharedSnapshots(
  store: PostgresStore,
  local: SnapshotTable,
  logger: Logger,
  later?: Map<string, () => void>,
): Promise<string[]> {
  let shared;
  try {
    shared = await store.loadRegistrySnapshots();
  } catch (err) {
    logger.warn({ err }, 'shared registry snapshots unreadable; warm-starting from the local ones');
    return [];
  }
  const copied: string[] = [];
  for (const head of shared) {
    const copy = (): boolean => {
      const mine = local.load(head.registry);
      if (mine && Date.parse(mine.syncedAt) >= Date.parse(head.syncedAt)) return false;
      return local.saveHosts(head.registry, decodeHosts(head.rows), 'all', head.syncedAt);
    };
    if (later?.has(head.registry)) later.set(head.registry, () => void copy());
    else if (copy()) copied.push(head.registry);
  }
  return copied;
}
