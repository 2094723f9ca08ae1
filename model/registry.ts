// The contract every service registry adapter (config-dir, mock, consul, zookeeper, kubernetes) fulfils.
// Adapters are level-triggered: they publish a whole snapshot, and say which hostnames changed.
import type { RegistryStatus } from './admin-api.js';
import type { ChangeEvent, RegistrySnapshot } from './change.js';

// The status is what the admin API shows of a registry, so its one definition is the API's.
export type { RegistryStatus } from './admin-api.js';

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
