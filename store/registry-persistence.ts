// Warm start and last-known-good persistence for registries: restore each registry's stored
// snapshot before it starts, then save its snapshot (debounced, one transaction) after every
// change, and record sync milestones in the history. A registry that is failing is never saved
// over: `replace` only happens on a successful sync.
import type { Registry } from '../model/registry.js';
import type { Logger } from '../log/logger.js';
import type { Store } from './store.js';
import type { RegistrySnapshot } from '../model/change.js';

/**
 * A save writes the hostnames that changed since the last one (one row each); the first save of a
 * run writes them all. Under steady churn, saves are still spaced so they take at most
 * 1/SAVE_SPACING of the time, and a change never pays for one.
 */
const SAVE_SPACING = 20;

/** Told of every local save (the shared store's copy, store/postgres/snapshot-mirror.ts); never blocks. */
export interface SnapshotMirror {
  saved(
    registry: string,
    snapshot: RegistrySnapshot,
    hosts: Iterable<string> | 'all',
    syncedAt: string,
  ): void;
}

/**
 * A registry whose start syncs it in full before anything is served (the config directory: start()
 * resolves once every file is read and published), so its stored snapshot would only be decoded,
 * diffed against the live one and dropped: it is restored only if that start fails part way.
 */
export interface DeferredRestore {
  restoreUnlessStarted(restore: () => void): void;
}

export function defersRestore(registry: Registry): registry is Registry & DeferredRestore {
  return typeof (registry as Partial<DeferredRestore>).restoreUnlessStarted === 'function';
}

export interface PersistenceOptions {
  /** Quiet time before a changed snapshot is written (default 500 ms). */
  readonly debounceMs?: number;
  /** Also told of every successful save (--store: PostgreSQL). */
  readonly mirror?: SnapshotMirror;
}

export class RegistryPersistence {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** How long each registry's last save took, in ms. */
  private readonly saveMs = new Map<string, number>();
  /**
   * Per registry: the hostnames changed since its last save; absent until a first (full) save, or
   * since the restore of the stored rows (which the first live snapshot's event is a diff against).
   */
  private readonly changed = new Map<string, Set<string>>();
  /** Registries whose shared copy (the mirror) has not been written whole this run yet. */
  private readonly mirrorWhole = new Set<string>();
  private readonly unsubscribes: (() => void)[] = [];
  private readonly debounceMs: number;
  private readonly mirror: SnapshotMirror | undefined;

  constructor(
    private readonly store: Store,
    private readonly registries: readonly Registry[],
    private readonly logger: Logger,
    options: PersistenceOptions = {},
  ) {
    this.debounceMs = options.debounceMs ?? 500;
    this.mirror = options.mirror;
  }

  /**
   * Before start (and after watch(), so the history records it): hands each registry that supports
   * it its stored snapshot. Returns their names. `before`: per registry whose restore is deferred,
   * what runs first if it happens (the shared snapshot's copy: snapshot-mirror.ts).
   */
  restore(before?: ReadonlyMap<string, () => void>): string[] {
    const restored: string[] = [];
    for (const registry of this.registries) {
      if (!registry.restore) continue;
      if (defersRestore(registry)) {
        registry.restoreUnlessStarted(() => {
          before?.get(registry.name)?.();
          this.restoreOne(registry);
        });
        continue;
      }
      if (this.restoreOne(registry)) restored.push(registry.name);
    }
    return restored;
  }

  /** Hands `registry` its stored snapshot, if there is one; whether it did. */
  private restoreOne(registry: Registry): boolean {
    let stored;
    try {
      stored = this.store.snapshots.load(registry.name);
    } catch (err) {
      this.logger.error({ err, registry: registry.name }, 'stored snapshot unreadable; starting without it');
      return false;
    }
    if (!stored || !registry.restore) return false;
    registry.restore(stored.snapshot, stored.syncedAt);
    // The stored rows are the restored snapshot: the first save after the live sync writes what
    // that sync changed, not every host again. Only for a per-host snapshot: saveHosts rewrites any
    // other whole anyway.
    if (stored.perHost) this.changed.set(registry.name, new Set());
    this.logger.info(
      { registry: registry.name, services: stored.snapshot.services.size, syncedAt: stored.syncedAt },
      'serving the stored snapshot until the first live sync',
    );
    return true;
  }

  /** Saves snapshots as registries change, and records their sync events. */
  watch(): void {
    for (const registry of this.registries) {
      this.unsubscribes.push(
        registry.onChange((event) => {
          // A rules-only event (a VirtualService edit) leaves the snapshot as it was: nothing to save.
          if (event.services.size === 0 && event.endpoints.size === 0) return;
          const changed = this.changed.get(registry.name);
          // The snapshot's hosts: rules and kinds are the config directory's, kept apart (history).
          for (const host of event.services) changed?.add(host);
          for (const host of event.endpoints) changed?.add(host);
          this.schedule(registry);
        }),
      );
      if (registry.onSyncEvent) {
        this.unsubscribes.push(
          registry.onSyncEvent((e) => {
            this.store.history.recordRegistry(registry.name, e.kind, e.detail);
            // A first live sync that changed nothing still marks the stored snapshot as current.
            if (e.kind === 'synced') this.schedule(registry);
          }),
        );
      }
    }
  }

  /** Writes every pending snapshot now (on shutdown), with the history rows waiting. */
  flush(): void {
    for (const [name, timer] of this.timers) {
      clearTimeout(timer);
      const registry = this.registries.find((r) => r.name === name);
      if (registry) this.save(registry);
    }
    this.timers.clear();
  }

  stop(): void {
    this.flush();
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
  }

  private schedule(registry: Registry): void {
    if (this.timers.has(registry.name)) return;
    this.timers.set(
      registry.name,
      setTimeout(
        () => {
          this.timers.delete(registry.name);
          this.save(registry);
        },
        Math.max(this.debounceMs, SAVE_SPACING * (this.saveMs.get(registry.name) ?? 0)),
      ),
    );
  }

  /** Saves now, in one transaction with every history row waiting (store/write-behind.ts). */
  private save(registry: Registry): void {
    this.store.writes.flush({
      what: `snapshot of ${registry.name}`,
      write: () => this.write(registry),
      // The commit failed: the next save rewrites every row, as after a failed save.
      failed: () => this.changed.delete(registry.name),
    });
  }

  // Only a live, successful sync is worth keeping: a restored snapshot is already stored.
  private write(registry: Registry): void {
    const status = registry.status();
    if (!registry.hasSynced() || status.restoredFrom !== undefined || !status.lastSyncAt) return;
    const started = performance.now();
    const changed = this.changed.get(registry.name);
    // A registry's first save of a run rewrites its rows (the stored ones may be from any earlier
    // state), and so does the save after a failed one.
    this.changed.set(registry.name, new Set());
    const snapshot = registry.snapshot();
    const saved = this.store.snapshots.saveHosts(
      registry.name,
      snapshot,
      changed ?? 'all',
      status.lastSyncAt,
    );
    if (!saved) this.changed.delete(registry.name);
    // The shared copy keeps its own pending hostnames, so a failed local write does not skip them.
    // It is written whole at its first save of a run: it may hold another replica's newer state than
    // the local rows this run restored.
    const whole = !this.mirrorWhole.has(registry.name);
    this.mirrorWhole.add(registry.name);
    this.mirror?.saved(registry.name, snapshot, whole ? 'all' : (changed ?? 'all'), status.lastSyncAt);
    this.saveMs.set(registry.name, performance.now() - started);
  }
}
