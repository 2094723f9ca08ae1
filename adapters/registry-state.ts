// The state half of a registry adapter: holds the published snapshot, and on each replacement emits
// exactly what changed (nothing when nothing did). Adapters compose it rather than re-deriving diffs.
import {
  changeOf,
  diffSnapshots,
  mergeChanges,
  EMPTY_SNAPSHOT,
  type ChangeEvent,
  type ChangeTrigger,
  type RegistrySnapshot,
} from '../model/change.js';
import { Listeners } from '../model/listeners.js';
import type { Registry, RegistryStatus, SyncEvent } from '../model/registry.js';

export class RegistryState {
  private current: RegistrySnapshot = EMPTY_SNAPSHOT;
  /** Endpoints in `current`, kept per replace (status() is read on every snapshot save). */
  private endpointCount = 0;
  private synced = false;
  private error: { message: string; at: string } | undefined;
  private lastSyncAt: string | undefined;
  /** When the snapshot restored from the store was synced; cleared by the first live sync. */
  private restoredFrom: string | undefined;
  private readonly listeners = new Listeners<ChangeEvent>();
  private readonly syncListeners = new Listeners<SyncEvent>();

  snapshot(): RegistrySnapshot {
    return this.current;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /**
   * Publishes a new snapshot, marks the registry synced, and emits the difference. With `failure`,
   * the source answered only in part (some watches fail): the snapshot is published but the
   * registry stays stale with that reason, and no recovery is recorded. `trigger` says what caused
   * it when the source knows (the config directory: the files edited), for the push. `also`: keys
   * the source knows changed besides the snapshot's (the config directory: the rules and kinds of
   * its traffic config), named in the same event.
   */
  replace(
    next: RegistrySnapshot,
    failure?: unknown,
    trigger?: ChangeTrigger,
    /** The only hostnames that can differ from the current snapshot, when the caller knows. */
    changed?: Iterable<string>,
    also?: ExtraKeys,
  ): void {
    const change = withTrigger(withKeys(diffSnapshots(this.current, next, changed), also), trigger);
    const recovered = failure === undefined && (this.error !== undefined || this.restoredFrom !== undefined);
    const notable = !this.synced || change !== undefined || recovered;
    this.endpointCount = changed ? this.countAfter(next, changed) : countEndpoints(next);
    this.current = next;
    this.synced = true;
    this.lastSyncAt = new Date().toISOString();
    this.restoredFrom = undefined;
    if (failure === undefined) this.error = undefined;
    if (change) this.listeners.emit(change);
    if (notable) this.syncListeners.emit({ kind: 'synced', detail: `${next.services.size} services` });
    if (failure !== undefined) this.fail(failure);
  }

  /** Records a failure; the last good snapshot stays published. */
  fail(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    const wasFailing = this.error !== undefined;
    this.error = { message, at: new Date().toISOString() };
    if (!wasFailing) this.syncListeners.emit({ kind: 'failed', detail: message });
  }

  /**
   * Serves a snapshot persisted by an earlier run until the first live sync: synced (so xDS can be
   * served at once) but stale.
   */
  restore(snapshot: RegistrySnapshot, syncedAt: string): void {
    const change = diffSnapshots(this.current, snapshot);
    this.endpointCount = countEndpoints(snapshot);
    this.current = snapshot;
    this.synced = true;
    this.restoredFrom = syncedAt;
    if (change) this.listeners.emit(change);
    this.syncListeners.emit({ kind: 'restored', detail: `snapshot synced at ${syncedAt}` });
  }

  status(): RegistryStatus {
    const endpoints = this.endpointCount;
    return {
      synced: this.synced,
      stale: (this.error !== undefined && this.synced) || this.restoredFrom !== undefined,
      ...(this.error && { lastError: this.error.message, lastErrorAt: this.error.at }),
      ...(this.lastSyncAt && { lastSyncAt: this.lastSyncAt }),
      ...(this.restoredFrom && { restoredFrom: this.restoredFrom }),
      services: this.current.services.size,
      endpoints,
    };
  }

  onChange(listener: (event: ChangeEvent) => void): () => void {
    return this.listeners.add(listener);
  }

  onSyncEvent(listener: (event: SyncEvent) => void): () => void {
    return this.syncListeners.add(listener);
  }

  /** The endpoint count of `next`, which differs from the current snapshot only in `changed`. */
  private countAfter(next: RegistrySnapshot, changed: Iterable<string>): number {
    let count = this.endpointCount;
    for (const host of new Set(changed)) {
      count += (next.endpoints.get(host)?.length ?? 0) - (this.current.endpoints.get(host)?.length ?? 0);
    }
    return count;
  }
}

/** Keys of a change a snapshot does not show (model/change.ts). */
export type ExtraKeys = Partial<Pick<ChangeEvent, 'rules' | 'kinds' | 'everything'>>;

/** The snapshot's diff with `also`'s keys; undefined when neither names anything. */
function withKeys(diff: ChangeEvent | undefined, also: ExtraKeys | undefined): ChangeEvent | undefined {
  if (!also || (!also.everything && !also.rules?.size && !also.kinds?.size)) return diff;
  return mergeChanges(diff ?? changeOf({}), changeOf(also));
}

function withTrigger(
  change: ChangeEvent | undefined,
  trigger: ChangeTrigger | undefined,
): ChangeEvent | undefined {
  return change && trigger ? { ...change, trigger } : change;
}

function countEndpoints(snapshot: RegistrySnapshot): number {
  let count = 0;
  for (const list of snapshot.endpoints.values()) count += list.length;
  return count;
}

/**
 * The read half of `Registry`, answered from a RegistryState. Adapters extend it and implement only
 * their name, start and stop, publishing through `this.state`.
 */
export abstract class StateBackedRegistry implements Registry {
  abstract readonly name: string;
  protected readonly state = new RegistryState();

  abstract start(): Promise<void>;
  abstract stop(): Promise<void>;

  hasSynced(): boolean {
    return this.state.hasSynced();
  }

  snapshot(): RegistrySnapshot {
    return this.state.snapshot();
  }

  status(): RegistryStatus {
    return this.state.status();
  }

  onChange(listener: (event: ChangeEvent) => void): () => void {
    return this.state.onChange(listener);
  }

  restore(snapshot: RegistrySnapshot, syncedAt: string): void {
    this.state.restore(snapshot, syncedAt);
  }

  onSyncEvent(listener: (event: SyncEvent) => void): () => void {
    return this.state.onSyncEvent(listener);
  }
}
