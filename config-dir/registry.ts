// The `config` registry: Istio ServiceEntry / WorkloadEntry / VirtualService / DestinationRule /
// Gateway manifests in a watched directory. Each file keeps its last good version in force while a newer
// one is broken, so a bad edit is reported (log + /debug/configz) but never takes services away.
//
// A file step — a watcher batch read (read-step.ts) into the file records (file-records.ts) — is
// planned (publication.ts) and published once: the snapshot and the mesh config in force are both
// updated, then ONE change event names what the step changed, the services and endpoints of its
// ServiceEntries and WorkloadEntries (the snapshot's diff) and the rules and kinds of its traffic
// config (mesh/config-change.ts).
import { resolve } from 'node:path';
import type { AcceptedFiles } from '../model/accepted-files.js';
import type { ConfigHistory } from '../model/config-history.js';
import type { RegistryStatus } from '../model/registry.js';
import { MAX_TRIGGER_NAMES, type ChangeTrigger } from '../model/change.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { StateBackedRegistry } from '../adapters/registry-state.js';
import { meshConfigStep, NO_CONFIG_CHANGE } from '../mesh/config-change.js';
import { EMPTY_MESH_CONFIG, type MeshConfig, type MeshConfigSource } from '../mesh/mesh-config.js';
import type { WorkloadEntrySource } from '../mesh/workload-entries.js';
import type { CandidateBase } from './candidate.js';
import { resourcesOf, type ConfigDebugState } from './debug-state.js';
import { FileRecords } from './file-records.js';
import { DEFAULT_READ_LIMITS, type ReadFs } from './read-file.js';
import { ReadStep } from './read-step.js';
import { comparePaths, type MergedConfig } from './merge.js';
import { REGISTRY_NAME } from './conversion.js';
import {
  afterPublication,
  fullMerge,
  NOTHING_PUBLISHED,
  planEdit,
  type Published,
  type Publication,
} from './publication.js';
import { REAL_TIMERS, waitOn, type Timers } from './timers.js';
import { DirWatcher } from './watcher.js';
import { ConfigGenerations } from './generations.js';

export type { ConfigDebugState } from './debug-state.js';
export type { MeshConfig } from '../mesh/mesh-config.js';

/**
 * An in-place write (truncate, then write) or an editor's save is over within milliseconds; 50 ms
 * of quiet covers it with room to spare, and a burst is read at most 100 ms after it began. The
 * push window (100 ms) comes after this, so this is most of what a file edit waits before its push.
 */
export const DEFAULT_DEBOUNCE_MS = 50;

export interface ConfigDirOptions {
  dir: string;
  /** Quiet time after the last file event before reloading; default DEFAULT_DEBOUNCE_MS. */
  debounceMs?: number;
  logger?: Logger;
  /** Where accepted versions are kept across restarts, and changes are recorded (the store). */
  history?: ConfigHistory;
  /** What each accepted file loaded to (the store): a restart takes unchanged files without a parse. */
  accepted?: AcceptedFiles;
  /** How long one file's read may take before it is an error for that file; default 5 s. */
  readTimeoutMs?: number;
  /** Tests only: the file system calls reads go through (to simulate a read that hangs). */
  readFs?: ReadFs;
  /** Tests only: the timers of the quiet period, the recheck and the reads again of emptied files. */
  timers?: Timers;
}

export class ConfigDirRegistry extends StateBackedRegistry implements MeshConfigSource {
  readonly name = REGISTRY_NAME;
  private readonly dir: string;
  private readonly logger: Logger;
  private readonly watcher: DirWatcher;
  private readonly records: FileRecords;
  private readonly step: ReadStep;
  private mesh: MeshConfig = EMPTY_MESH_CONFIG;
  /** What the publishes so far leave in force besides the snapshot and the mesh config. */
  private last: Published = NOTHING_PUBLISHED;
  /** WorkloadEntries from outside the directory (auto-registered VMs), selected like the files' own. */
  private entrySource: WorkloadEntrySource | undefined;
  /** Whether a snapshot read from the directory has been published (a restored one does not count). */
  private published = false;
  /** A publish is emitting its event; the entry source changed meanwhile (see entriesChanged). */
  private publishing = false;
  private entriesStale = false;
  /** The store's snapshot, restored if start() fails before its first publish. */
  private pendingRestore: (() => void) | undefined;
  /** Why the initial load stopped part way (a reload that threw): not ready until a restart. */
  private startFailure: string | undefined;
  /** The id of each publication (generations.ts). */
  private readonly generations: ConfigGenerations;

  constructor(options: ConfigDirOptions) {
    super();
    this.dir = resolve(options.dir);
    this.logger = options.logger ?? silentLogger;
    const timers = options.timers ?? REAL_TIMERS;
    this.generations = new ConfigGenerations(options.history);
    this.records = new FileRecords(this.logger, this.generations.tagging(options.history), options.accepted);
    this.watcher = new DirWatcher({
      dir: this.dir,
      debounceMs: options.debounceMs ?? DEFAULT_DEBOUNCE_MS,
      timers,
      reload: (paths) => this.reload(paths),
      onError: (error) => {
        this.logger.error({ err: error, dir: this.dir }, 'config directory watch error');
        this.state.fail(error);
      },
      // The last resort, past every file's own boundary: a step across files (the merge, the
      // conversion) threw. At start the rest of the directory went unread: not ready, for good.
      onReloadError: (error, initial) => {
        this.logger.error(
          { err: error, dir: this.dir },
          'config directory reload failed (a bug; please report it)',
        );
        if (initial) this.startFailure = error.message;
        this.state.fail(error);
      },
    });
    const limits = {
      ...DEFAULT_READ_LIMITS,
      ...(options.readTimeoutMs !== undefined && { timeoutMs: options.readTimeoutMs }),
    };
    const wait = (ms: number) => waitOn(timers, ms);
    this.step = new ReadStep(this.dir, this.records, this.watcher, wait, limits, options.readFs);
  }

  /**
   * The store's snapshot is wanted only if start() fails before its first publish: start() reads
   * and publishes every file before anything is served (store/registry-persistence.ts).
   */
  restoreUnlessStarted(restore: () => void): void {
    this.pendingRestore = restore;
  }

  async start(): Promise<void> {
    const started = performance.now();
    try {
      await this.watcher.start();
      // An empty directory loads nothing, yet the first publish is what marks the registry synced
      // (and replaces a restored snapshot).
      if (!this.published) this.publishAll([]);
    } finally {
      const restore = this.pendingRestore;
      this.pendingRestore = undefined;
      if (!this.published) restore?.();
    }
    const summary = this.records.startSummary();
    this.records.markStarted();
    this.logger.info(
      { dir: this.dir, ...summary, ms: Math.round(performance.now() - started) },
      'config directory loaded',
    );
  }

  /** With `unready`: the files of the initial load that could not be read (not ready until they are). */
  override status(): RegistryStatus {
    const base = super.status();
    const unready = this.records.unread();
    if (this.startFailure !== undefined)
      unready.push(`the initial load failed part way (${this.startFailure}); restart once fixed`);
    return unready.length === 0 ? base : { ...base, unready };
  }

  stop(): Promise<void> {
    return this.watcher.stop();
  }

  /** The traffic config in force (VirtualServices, DestinationRules, Gateways, ...). */
  meshConfig(): MeshConfig {
    return this.mesh;
  }

  /**
   * Adds WorkloadEntries from outside the directory (auto-registration): ServiceEntries select them
   * by label like the files' own, and a file's entry of the same namespace/name wins. Their changes
   * re-run the selection only (the files are not merged again). Returns the function that detaches it.
   */
  addWorkloadEntries(source: WorkloadEntrySource): () => void {
    this.entrySource = source;
    const stop = source.onWorkloadEntriesChange(() => this.entriesChanged());
    if (this.published) this.publishAll([], this.mergedConfig());
    return () => {
      stop();
      this.entrySource = undefined;
    };
  }

  /** The config generation in force: the id of the last publication (0 before any). */
  generation(): number {
    return this.generations.current;
  }

  /**
   * Takes in every change on disk now (POST /debug/config_sync): what the directory holds is
   * compared with what is in force, so a write whose event has not arrived yet, or waits in the
   * quiet period, is taken too; publishes if anything changed. Resolves to the generation in force
   * after that. Calls while one runs share the next rescan.
   */
  async sync(): Promise<number> {
    await this.watcher.rescan();
    return this.generations.current;
  }

  /**
   * What a candidate of the whole directory is evaluated against (candidate.ts, `portolan diff`): the
   * versions in force, the outside WorkloadEntries and the mesh config, read now. Changes nothing.
   */
  candidateBase(): CandidateBase {
    const inForce = new Map(this.records.debugFiles().map((f) => [f.path, this.records.inForce(f.path)]));
    return { inForce, outsideEntries: this.entrySource?.workloadEntries() ?? [], mesh: this.mesh };
  }

  /** Resolves when pending reloads have been applied (useful in tests). */
  settled(): Promise<void> {
    return this.watcher.settled();
  }

  debugState(): ConfigDebugState {
    return {
      dir: this.dir,
      synced: this.hasSynced(),
      files: this.records.debugFiles(),
      conflicts: this.last.conflicts,
      warnings: this.last.crossWarnings,
      resources: resourcesOf(this.mergedConfig()),
    };
  }

  /** Re-reads `paths`; publishes and resolves true if any of them changed. */
  private async reload(paths: ReadonlySet<string>): Promise<boolean> {
    const changes = await this.step.read(paths);
    if (changes.length === 0) return false;
    const files = [...paths].sort(comparePaths).slice(0, MAX_TRIGGER_NAMES);
    const build =
      this.published && this.last.claimConflicts.length === 0
        ? planEdit(this.records.steps(changes), this.records, {
            ...this.last,
            snapshot: this.state.snapshot(),
          })
        : undefined;
    if (!build) {
      this.publishAll(files);
      return true;
    }
    // The edit's claims settle (incremental.ts): its candidates are taken as they stand.
    this.records.acceptCandidates(changes.map((c) => c.path));
    this.publish(build(), files);
    return true;
  }

  /**
   * Merges every file in force again and publishes it. `reuse`: the files are as they were (only
   * the outside WorkloadEntries changed), so their candidates are not settled again and the
   * traffic config stays as it is.
   */
  private publishAll(files: readonly string[], reuse?: MergedConfig): void {
    const claimConflicts = reuse ? this.last.claimConflicts : this.records.settle();
    const merged = reuse ?? this.records.mergeAll();
    const publication = fullMerge(merged, claimConflicts, this.entrySource?.workloadEntries() ?? []);
    this.publish(reuse ? { ...publication, traffic: undefined } : publication, files);
  }

  /**
   * The one publish path: what the step changed becomes readable (the snapshot, the mesh config,
   * /debug/configz), then one event names it. `files`: the edit, for the push's trigger.
   */
  private publish(publication: Publication, files: readonly string[]): void {
    const { full, traffic, warnings } = publication;
    if (full)
      this.logNew(full.conflicts, this.last.conflicts, (c) => [
        { file: c.ignored.file, line: c.ignored.line, kept: c.kept, ignored: c.ignored },
        `${c.type === 'duplicate-host' ? 'host' : 'resource'} ${c.subject} defined twice; ignoring ${c.ignored.file}:${c.ignored.line}, keeping ${c.kept.file}:${c.kept.line}`,
      ]);
    if (warnings)
      this.logNew(warnings, this.last.crossWarnings, (w) => [
        { file: w.resource.file, line: w.resource.line, resource: w.resource },
        w.message,
      ]);
    let keys = NO_CONFIG_CHANGE;
    if (traffic) {
      // Only the resources of files whose version in force changed are compared.
      const touched = this.records.takeTouched();
      const step = meshConfigStep(this.mesh, traffic, touched.keys, touched.versions);
      this.mesh = step.config;
      keys = step.keys;
    }
    this.last = afterPublication(this.last, publication);
    // With a file broken, the directory answered only in part: published, but still failing, so
    // an edit elsewhere records neither a recovery nor a new failure.
    this.publishing = true;
    try {
      this.state.replace(
        publication.snapshot,
        this.records.failure(),
        editTrigger(files, this.generations.next()),
        publication.hosts,
        keys,
      );
    } finally {
      this.publishing = false;
    }
    this.published = true;
    if (this.entriesStale) this.entriesChanged();
  }

  /**
   * The outside WorkloadEntries changed: the selection runs again. A listener of this registry's
   * own event may cause it (auto-registration re-reads the WorkloadGroups the event names): that
   * publish follows the one emitting, so each event describes a snapshot in force.
   */
  private entriesChanged(): void {
    if (this.publishing) {
      this.entriesStale = true;
      return;
    }
    this.entriesStale = false;
    if (this.published) this.publishAll([], this.mergedConfig());
  }

  /** The merged resources of the files in force. */
  private mergedConfig(): MergedConfig {
    if (this.last.mergedStale)
      this.last = { ...this.last, merged: this.records.mergeAll(), mergedStale: false };
    return this.last.merged;
  }

  /** Logs the items of `next` not in `previous` (each once, as it appears). */
  private logNew<T>(
    next: readonly T[],
    previous: readonly T[],
    describe: (item: T) => [object, string],
  ): void {
    const seen = new Set(previous.map((item) => JSON.stringify(item)));
    for (const item of next) {
      if (seen.has(JSON.stringify(item))) continue;
      const [fields, message] = describe(item);
      this.logger.warn(fields, message);
    }
  }
}

/**
 * What caused a publish, for the push: the files of an edit. The watcher read them only after its
 * quiet period, so the push need not wait for one of its own (`debounced`). `generation`: the
 * publication's id.
 */
function editTrigger(files: readonly string[], generation: number): ChangeTrigger {
  return files.length > 0
    ? { registries: [], files, debounced: true, generation }
    : { registries: [], files: [], generation };
}
