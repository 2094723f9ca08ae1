// The contract every service registry adapter (config-dir, mock, consul, zookeeper, kubernetes) fulfils.
// Adapters are level-triggered: they publish a whole snapshot, and say which hostnames changed.
import type { ChangeEvent, RegistrySnapshot } from './change.js';

export interface RegistryStatus {
  readonly synced: boolean;
  /** Serving a last known good state because the source is failing. */
  readonly stale: boolean;
  readonly lastError?: string;
  readonly lastErrorAt?: string;
  /** When the source last answered in full (the published snapshot is from then). */
  readonly lastSyncAt?: string;
  /** Serving a snapshot persisted by an earlier run (synced at this time) until the first live sync. */
  readonly restoredFrom?: string;
  readonly services: number;
  readonly endpoints: number;
  /**
   * Parts of the source the registry became ready without, each with the reason (e.g. a Consul
   * service whose query kept failing at start, past --consul-sync-timeout). Absent when none.
   */
  readonly incomplete?: readonly string[];
  /**
   * Parts of the source the registry is not ready without, each with the reason: /ready answers 503
   * while any is listed, though what did load is served (the config directory: a file of the initial
   * load that could not be read). Absent when none.
   */
  readonly unready?: readonly string[];
}

export interface Registry {
  /** The name used in `--registries` and in Service.registry. */
  readonly name: string;
  /** Begins watching; resolves once the first sync completed (or failed and is being retried). */
  start(): Promise<void>;
  stop(): Promise<void>;
  hasSynced(): boolean;
  snapshot(): RegistrySnapshot;
  status(): RegistryStatus;
  onChange(listener: (event: ChangeEvent) => void): () => void;
  /** Adapter-specific state for /debug/registryz (watches, skipped nodes, ...). */
  debug?(): unknown;
  /** Serves a snapshot persisted by an earlier run until the first live sync (warm start). */
  restore?(snapshot: RegistrySnapshot, syncedAt: string): void;
  /** Sync milestones for the history: first/recovered sync, failure, restore. */
  onSyncEvent?(listener: (event: SyncEvent) => void): () => void;
}

export interface SyncEvent {
  readonly kind: 'synced' | 'failed' | 'restored';
  readonly detail: string;
}
