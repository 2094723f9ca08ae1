// The `config` registry: Istio ServiceEntry / WorkloadEntry / VirtualService / DestinationRule /
// Gateway manifests in a watched directory. Each file keeps its last good version in force while a newer
// one is broken, so a bad edit is reported (log + /debug/configz) but never takes services away.
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ConfigHistory } from '../model/config-history.js';
import { Listeners } from '../model/listeners.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { StateBackedRegistry } from '../adapters/registry-state.js';
import { resourcesOf, type ConfigDebugState, type FileDebugState } from './debug-state.js';
import { formatIssue, loadConfigFile, type FileLoad } from './load-file.js';
import { comparePaths, mergeFiles, type ConfigConflict, type MergedConfig } from './merge.js';
import { buildSnapshot, REGISTRY_NAME, type CrossResourceWarning } from './conversion.js';
import {
  EMPTY_MESH_CONFIG,
  nextMeshConfig,
  type MeshConfig,
  type MeshConfigSource,
} from '../mesh/mesh-config.js';
import { resourceKey, type WorkloadEntryResource } from '../mesh/types.js';
import type { WorkloadEntrySource } from '../mesh/workload-entries.js';
import type { ConfigIssue } from './issue.js';
import { DirWatcher } from './watcher.js';
import { unknownSubsetWarnings } from './validate/virtual-service.js';
import { resolveHost } from '../mesh/hosts.js';

export type { ConfigDebugState } from './debug-state.js';
export type { MeshConfig } from '../mesh/mesh-config.js';

export interface ConfigDirOptions {
  dir: string;
  /** Quiet time after the last file event before reloading; default 100 ms. */
  debounceMs?: number;
  logger?: Logger;
  /** Where accepted versions are kept across restarts, and changes are recorded (the store). */
  history?: ConfigHistory;
}

interface FileRecord {
  /** The version in force; undefined if the file never loaded cleanly. */
  readonly good: FileLoad | undefined;
  readonly loadedAt: string | null;
  readonly checkedAt: string;
  /** The last read attempt's problems (errors mean `good` is older than the file on disk). */
  readonly errors: readonly ConfigIssue[];
  readonly warnings: readonly ConfigIssue[];
  /** Text of the last read, to skip reloads of unchanged content (touch, chmod). */
  readonly text: string | undefined;
}

const EMPTY_MERGED: MergedConfig = {
  serviceEntries: [],
  workloadEntries: [],
  virtualServices: [],
  destinationRules: [],
  gateways: [],
  sidecars: [],
  peerAuthentications: [],
  workloadGroups: [],
  conflicts: [],
};

export class ConfigDirRegistry extends StateBackedRegistry implements MeshConfigSource {
  readonly name = REGISTRY_NAME;
  private readonly dir: string;
  private readonly logger: Logger;
  private readonly watcher: DirWatcher;
  private readonly files = new Map<string, FileRecord>();
  private readonly configListeners = new Listeners<void>();
  private merged: MergedConfig = EMPTY_MERGED;
  private mesh: MeshConfig = EMPTY_MESH_CONFIG;
  private conflicts: readonly ConfigConflict[] = [];
  private crossWarnings: readonly CrossResourceWarning[] = [];
  /** Whether a snapshot read from the directory has been published (a restored one does not count). */
  private published = false;
  /** WorkloadEntries from outside the directory (auto-registered VMs), selected like the files' own. */
  private entrySource: WorkloadEntrySource | undefined;

  constructor(private readonly options: ConfigDirOptions) {
    super();
    this.dir = resolve(options.dir);
    this.logger = options.logger ?? silentLogger;
    this.watcher = new DirWatcher({
      dir: this.dir,
      debounceMs: options.debounceMs ?? 100,
      reload: (paths) => this.reload(paths),
      onError: (error) => {
        this.logger.error({ err: error, dir: this.dir }, 'config directory watch error');
        this.state.fail(error);
      },
    });
  }

  async start(): Promise<void> {
    await this.watcher.start();
    // An empty directory loads nothing, yet the first publish is what marks the registry synced (and
    // replaces a restored snapshot).
    if (!this.published) this.publish();
  }

  stop(): Promise<void> {
    return this.watcher.stop();
  }

  /** The traffic config in force (VirtualServices, DestinationRules, Gateways). */
  meshConfig(): MeshConfig {
    return this.mesh;
  }

  /** Fires when the mesh config changes (after meshConfig() returns the new one). */
  onConfigChange(listener: () => void): () => void {
    return this.configListeners.add(listener);
  }

  /**
   * Adds WorkloadEntries from outside the directory (auto-registration): ServiceEntries select them
   * by label like the files' own, and a file's entry of the same namespace/name wins. Their changes
   * re-run the selection only (the files are not merged again). Returns the function that detaches it.
   */
  addWorkloadEntries(source: WorkloadEntrySource): () => void {
    this.entrySource = source;
    const stop = source.onWorkloadEntriesChange(() => {
      if (this.published) this.publish(this.merged);
    });
    if (this.published) this.publish(this.merged);
    return () => {
      stop();
      this.entrySource = undefined;
    };
  }

  /** Resolves when pending reloads have been applied (useful in tests). */
  settled(): Promise<void> {
    return this.watcher.settled();
  }

  debugState(): ConfigDebugState {
    const files: FileDebugState[] = [...this.files.entries()]
      .sort(([a], [b]) => comparePaths(a, b))
      .map(([path, f]) => ({
        path,
        loadedAt: f.loadedAt,
        checkedAt: f.checkedAt,
        status: f.errors.length > 0 ? 'error' : 'ok',
        errors: f.errors,
        warnings: f.warnings,
        resources: f.good?.resources.map(resourceKey) ?? [],
      }));
    return {
      dir: this.dir,
      synced: this.hasSynced(),
      files,
      conflicts: this.conflicts,
      warnings: this.crossWarnings,
      resources: resourcesOf(this.merged),
    };
  }

  /** Re-reads `paths`; publishes and resolves true if any of them changed. */
  private async reload(paths: ReadonlySet<string>): Promise<boolean> {
    let changed = false;
    for (const path of [...paths].sort(comparePaths)) {
      if (await this.reloadFile(path)) changed = true;
    }
    if (changed) this.publish();
    return changed;
  }

  private async reloadFile(path: string): Promise<boolean> {
    const previous = this.files.get(path);
    const checkedAt = new Date().toISOString();
    let text: string;
    try {
      text = await readFile(join(this.dir, path), 'utf8');
    } catch (e) {
      if (isNotFound(e)) {
        if (!previous) return false;
        this.logger.info({ file: path }, 'config file removed');
        this.files.delete(path);
        this.options.history?.recordConfig(path, 'removed', {});
        return true;
      }
      const issue: ConfigIssue = {
        line: 0,
        message: `cannot read: ${e instanceof Error ? e.message : String(e)}`,
      };
      this.logger.warn({ file: path }, formatIssue(path, issue));
      this.files.set(path, {
        ...keepGood(previous),
        checkedAt,
        errors: [issue],
        warnings: [],
        text: undefined,
      });
      return true;
    }
    if (previous && previous.text === text) return false;

    // An empty file that used to define something is far more often a save caught half-way than an
    // intent to drop it all; deleting the file is the way to remove what it defined.
    const load =
      text.trim() === '' && previous?.good?.resources.length
        ? emptyFileRejected(path)
        : loadConfigFile(path, text);
    for (const w of load.warnings) this.logger.info({ file: path, line: w.line }, formatIssue(path, w));
    if (load.errors.length === 0) {
      this.logger.info({ file: path, resources: load.resources.length }, 'config file loaded');
      this.options.history?.recordConfig(path, 'accepted', {
        text,
        resources: load.resources.map(resourceKey),
      });
      this.files.set(path, {
        good: load,
        loadedAt: checkedAt,
        checkedAt,
        errors: [],
        warnings: load.warnings,
        text,
      });
      return true;
    }
    for (const e of load.errors) this.logger.warn({ file: path, line: e.line }, formatIssue(path, e));
    this.logger.warn(
      { file: path, errors: load.errors.length },
      previous?.good ? 'config file rejected; keeping its last good version' : 'config file rejected',
    );
    this.options.history?.recordConfig(path, 'rejected', {
      text,
      error: load.errors.map((e) => formatIssue(path, e)).join('; '),
    });
    this.files.set(path, {
      ...(previous?.good ? keepGood(previous) : this.storedGood(path, checkedAt)),
      checkedAt,
      errors: load.errors,
      warnings: load.warnings,
      text,
    });
    return true;
  }

  /** For a file broken since start: its last accepted version from an earlier run, if it still loads. */
  private storedGood(path: string, at: string): Pick<FileRecord, 'good' | 'loadedAt'> {
    const text = this.options.history?.lastAcceptedText(path);
    if (text === undefined) return { good: undefined, loadedAt: null };
    const stored = loadConfigFile(path, text);
    if (stored.errors.length > 0) return { good: undefined, loadedAt: null };
    this.logger.warn({ file: path }, 'serving the last accepted version of this file from the store');
    return { good: stored, loadedAt: at };
  }

  /** Recomputes everything from the in-force file versions (or `merged` of them) and publishes what changed. */
  private publish(
    merged = mergeFiles([...this.files.values()].flatMap((f) => (f.good ? [f.good] : []))),
  ): void {
    const conversion = buildSnapshot(merged.serviceEntries, this.withSourceEntries(merged.workloadEntries));
    const conflicts = [...merged.conflicts, ...conversion.conflicts];
    this.logNew(conflicts, this.conflicts, (c) => [
      { kept: c.kept, ignored: c.ignored },
      `${c.type === 'duplicate-host' ? 'host' : 'resource'} ${c.subject} defined twice; ignoring ${c.ignored.file}:${c.ignored.line}, keeping ${c.kept.file}:${c.kept.line}`,
    ]);
    const warnings = [
      ...conversion.warnings,
      ...unknownSubsetWarnings(merged.virtualServices, merged.destinationRules, resolveHost),
    ];
    this.logNew(warnings, this.crossWarnings, (w) => [{ resource: w.resource }, w.message]);

    const previousMesh = this.mesh;
    // Everything readable is updated before any listener runs.
    this.merged = merged;
    this.mesh = nextMeshConfig(previousMesh, merged);
    this.conflicts = conflicts;
    this.crossWarnings = warnings;
    // With a file broken, the directory answered only in part: published, but still failing, so
    // an edit elsewhere records neither a recovery nor a new failure.
    const broken = [...this.files.entries()].filter(([, f]) => f.errors.length > 0);
    const first = broken[0];
    const issue = first?.[1].errors[0];
    const failure =
      first &&
      new Error(
        `${broken.length} config file(s) with errors${issue ? `, e.g. ${formatIssue(first[0], issue)}` : ''}`,
      );
    this.state.replace(conversion.snapshot, failure);
    this.published = true;
    if (this.mesh.generation !== previousMesh.generation) this.configListeners.emit();
  }

  private withSourceEntries(own: readonly WorkloadEntryResource[]): readonly WorkloadEntryResource[] {
    const extra = this.entrySource?.workloadEntries() ?? [];
    if (extra.length === 0) return own;
    const taken = new Set(own.map(resourceKey));
    return [...own, ...extra.filter((e) => !taken.has(resourceKey(e)))];
  }

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

function keepGood(previous: FileRecord | undefined): Pick<FileRecord, 'good' | 'loadedAt'> {
  return { good: previous?.good, loadedAt: previous?.loadedAt ?? null };
}

function isNotFound(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  // EISDIR/ENOTDIR: the path became a directory, or a parent stopped being one; either way the file is gone.
  return code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR';
}

function emptyFileRejected(path: string): FileLoad {
  const message =
    'file is empty; its last good version stays in force (delete the file to remove what it defined)';
  return { path, errors: [{ line: 1, message }], warnings: [], resources: [] };
}
