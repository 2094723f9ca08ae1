// The `config` registry: Istio ServiceEntry / WorkloadEntry / VirtualService / DestinationRule /
// Gateway manifests in a watched directory. Each file keeps its last good version in force while a newer
// one is broken, so a bad edit is reported (log + /debug/configz) but never takes services away.
import { join, relative, resolve, sep } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConfigHistory } from '../model/config-history.js';
import type { RegistryStatus } from '../model/registry.js';
import { MAX_TRIGGER_NAMES, type ChangeTrigger } from '../model/change.js';
import { Listeners } from '../model/listeners.js';
import { LayeredMap } from '../model/layered-map.js';
import { silentLogger, type Logger } from '../log/logger.js';
import { StateBackedRegistry } from '../adapters/registry-state.js';
import { resourcesOf, type ConfigDebugState, type FileDebugState } from './debug-state.js';
import { formatIssue, loadConfigFile, NO_POSITIONS, type FileLoad } from './load-file.js';
import { resolveClaims, type FileVersions } from './claims.js';
import { FileIndex } from './file-index.js';
import { isMeshConfigEdit, planIncremental, planWorkloadEntries, type FileStep } from './incremental.js';
import { SelectionIndex } from './selection-index.js';
import { ConfigFileReader, DEFAULT_READ_LIMITS, type FileRead, type ReadFs } from './read-file.js';
import {
  comparePaths,
  MESH_CONFIG_KINDS,
  mergeFiles,
  meshConfigLists,
  type ConfigConflict,
  type MergedConfig,
  type MeshConfigLists,
} from './merge.js';
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

/**
 * An in-place write (truncate, then write) or an editor's save is over within milliseconds; 50 ms
 * of quiet covers it with room to spare, and a burst is read at most 100 ms after it began. The
 * push window (100 ms) comes after this, so this is most of what a file edit waits before its push.
 */
export const DEFAULT_DEBOUNCE_MS = 50;

/**
 * Waits before each read again of files found emptied (see reload()), ms: 21 ms in all, well under
 * the quiet period, and far over the milliseconds a writer on a busy machine takes between them.
 */
const EMPTIED_REREAD_MS = [1, 4, 16];

/** A file a reload changed, with the version that was in force before. */
interface FileChange {
  readonly path: string;
  readonly before: FileLoad | undefined;
}

export interface ConfigDirOptions {
  dir: string;
  /** Quiet time after the last file event before reloading; default DEFAULT_DEBOUNCE_MS. */
  debounceMs?: number;
  logger?: Logger;
  /** Where accepted versions are kept across restarts, and changes are recorded (the store). */
  history?: ConfigHistory;
  /** How long one file's read may take before it is an error for that file; default 5 s. */
  readTimeoutMs?: number;
  /** Tests only: the file system calls reads go through (to simulate a read that hangs). */
  readFs?: ReadFs;
}

interface InForce {
  /** The version in force; undefined if the file never loaded cleanly. */
  readonly good: FileLoad | undefined;
  readonly loadedAt: string | null;
  /** `good` is the last accepted version of an earlier run, from the store. */
  readonly fromStore: boolean;
}

interface FileRecord extends InForce {
  readonly checkedAt: string;
  /**
   * The last read's problems, or why its version is held back (errors mean `good` is older than
   * the file on disk).
   */
  readonly errors: readonly ConfigIssue[];
  readonly warnings: readonly ConfigIssue[];
  /** Text of the last read, to skip reloads of unchanged content (touch, chmod). */
  readonly text: string | undefined;
  /** The last read's version, valid but not yet in force: publish() takes it or holds it back. */
  readonly candidate?: Candidate;
}

interface Candidate {
  readonly load: FileLoad;
  readonly text: string;
  readonly at: string;
  /** Why it is held back, once it has been (logged and recorded once per reason). */
  readonly heldFor: string | undefined;
}

const EMPTY_MERGED: MergedConfig = {
  serviceEntries: [],
  workloadEntries: [],
  virtualServices: [],
  destinationRules: [],
  gateways: [],
  sidecars: [],
  peerAuthentications: [],
  authorizationPolicies: [],
  requestAuthentications: [],
  workloadGroups: [],
  conflicts: [],
};

export class ConfigDirRegistry extends StateBackedRegistry implements MeshConfigSource {
  readonly name = REGISTRY_NAME;
  private readonly dir: string;
  private readonly logger: Logger;
  private readonly watcher: DirWatcher;
  private readonly files = new Map<string, FileRecord>();
  /** Claims, candidates and errors across `files`, kept by setFile(). */
  private readonly index = new FileIndex();
  private readonly configListeners = new Listeners<ChangeTrigger>();
  private merged: MergedConfig = EMPTY_MERGED;
  /** `merged.serviceEntries` is behind the files: an incremental publish changed them (mergedConfig()). */
  private mergedStale = false;
  private mesh: MeshConfig = EMPTY_MESH_CONFIG;
  private conflicts: readonly ConfigConflict[] = [];
  /** Clashes between files, from the last settleCandidates(). */
  private claimConflicts: readonly ConfigConflict[] = [];
  private readonly reader: ConfigFileReader;
  private crossWarnings: readonly CrossResourceWarning[] = [];
  /** The part of crossWarnings from the services' conversion (the last full publish). */
  private conversionWarnings: readonly CrossResourceWarning[] = [];
  /** Files whose version in force defines some traffic config (kept by setFile()). */
  private readonly meshFiles = new Set<string>();
  /**
   * Files that had content and were found empty, and are being read again before that counts (an
   * in-place save caught between its truncate and its write): the watcher's writesSeen then.
   * Bounded by the files.
   */
  private readonly emptyOnce = new Map<string, number>();
  /** Whether a snapshot read from the directory has been published (a restored one does not count). */
  private published = false;
  /**
   * Who selects which WorkloadEntry, from the last full publish; undefined when that publish had a
   * conflict or a cross-resource warning (a WorkloadEntry edit then takes the full publish too).
   */
  private selection: SelectionIndex | undefined;
  /** WorkloadEntries from outside the directory (auto-registered VMs), selected like the files' own. */
  private entrySource: WorkloadEntrySource | undefined;
  /**
   * Files of the initial load that could not be read (a read error, not a verdict on content), with
   * why, until a read gets through or the file goes: while any is listed the registry is not ready
   * (status().unready, /ready), since what such a file would serve is unknown.
   */
  private readonly unreadAtStart = new Map<string, string>();
  /** The initial load is over (start() returned): later read errors are ordinary. */
  private started = false;
  /** Why the initial load stopped part way (a reload that threw): not ready until a restart. */
  private startFailure: string | undefined;

  constructor(private readonly options: ConfigDirOptions) {
    super();
    this.dir = resolve(options.dir);
    this.logger = options.logger ?? silentLogger;
    this.reader = new ConfigFileReader(
      {
        ...DEFAULT_READ_LIMITS,
        ...(options.readTimeoutMs !== undefined && { timeoutMs: options.readTimeoutMs }),
      },
      options.readFs,
      (absolute) => this.watcher.readAgain(relative(this.dir, absolute).split(sep).join('/')),
    );
    this.watcher = new DirWatcher({
      dir: this.dir,
      debounceMs: options.debounceMs ?? DEFAULT_DEBOUNCE_MS,
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
  }

  async start(): Promise<void> {
    await this.watcher.start();
    this.started = true;
    // An empty directory loads nothing, yet the first publish is what marks the registry synced (and
    // replaces a restored snapshot).
    if (!this.published) this.publish();
  }

  /** With `unready`: the files of the initial load that could not be read (not ready until they are). */
  override status(): RegistryStatus {
    const base = super.status();
    if (this.unreadAtStart.size === 0 && this.startFailure === undefined) return base;
    const unready = [...this.unreadAtStart]
      .sort(([a], [b]) => comparePaths(a, b))
      .map(([path, why]) => `${path} could not be read at start (${why})`);
    if (this.startFailure !== undefined)
      unready.push(`the initial load failed part way (${this.startFailure}); restart once fixed`);
    return { ...base, unready };
  }

  stop(): Promise<void> {
    return this.watcher.stop();
  }

  /** The traffic config in force (VirtualServices, DestinationRules, Gateways). */
  meshConfig(): MeshConfig {
    return this.mesh;
  }

  /** Fires when the mesh config changes (after meshConfig() returns the new one), naming the files edited. */
  onConfigChange(listener: (trigger?: ChangeTrigger) => void): () => void {
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
      if (this.published) this.publish([], this.mergedConfig());
    });
    if (this.published) this.publish([], this.mergedConfig());
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
      resources: resourcesOf(this.mergedConfig()),
    };
  }

  /** Re-reads `paths`; publishes and resolves true if any of them changed. */
  private async reload(paths: ReadonlySet<string>): Promise<boolean> {
    const sorted = [...paths].sort(comparePaths);
    const steps: FileChange[] = [];
    let emptied = await this.readAll(sorted, steps);
    // A file that had content found empty is most likely an in-place save caught between its
    // truncate and its write. The write follows at once, unless the writer lost its CPU in between,
    // which on a busy machine lasts milliseconds: read such files again a few times, yielding. (The
    // read again a quiet period later, in take(), falls in step with a writer that saves as often:
    // a save every 50 ms had a fifth of the reads land in that gap, and files went unread for up to
    // 650 ms, in bench churn (a).) The delays are per batch, not per file.
    for (const ms of EMPTIED_REREAD_MS) {
      if (emptied.size === 0) break;
      await sleep(ms);
      emptied = await this.readAll(emptied.keys(), steps);
    }
    for (const [path, read] of emptied) this.take(path, read, steps);
    if (steps.length === 0) return false;
    steps.sort((a, b) => comparePaths(a.path, b.path));
    const trigger = sorted.slice(0, MAX_TRIGGER_NAMES);
    if (!this.publishEdit(steps, trigger)) this.publish(trigger);
    return true;
  }

  /** Reads `paths` and takes each read (take()), except those that found a file emptied: returned. */
  private async readAll(paths: Iterable<string>, steps: FileChange[]): Promise<Map<string, FileRead>> {
    const emptied = new Map<string, FileRead>();
    for (const path of paths) {
      const read = await this.reader.read(join(this.dir, path));
      if (this.foundEmptied(path, read)) emptied.set(path, read);
      else this.take(path, read, steps);
    }
    return emptied;
  }

  /** Applies a read of `path`, noting it in `steps` if that changed the file. */
  private take(path: string, read: FileRead, steps: FileChange[]): void {
    const before = this.files.get(path)?.good;
    if (this.applyRead(path, read)) steps.push({ path, before });
  }

  /** Whether `read` found a file that defined something empty (or only space). */
  private foundEmptied(path: string, read: FileRead): boolean {
    return (
      read.kind === 'text' && read.text.trim() === '' && Boolean(this.files.get(path)?.good?.resources.length)
    );
  }

  private setFile(path: string, record: FileRecord | undefined): void {
    this.index.update(path, this.files.get(path), record);
    if (record) this.files.set(path, record);
    else this.files.delete(path);
    if (record?.good?.resources.some((r) => MESH_CONFIG_KINDS.has(r.kind))) this.meshFiles.add(path);
    else this.meshFiles.delete(path);
  }

  /** The traffic config of the files in force, as mergeFiles would list it (no conflicts stand). */
  private meshLists(): MeshConfigLists {
    const paths = [...this.meshFiles].sort(comparePaths);
    return meshConfigLists(paths.flatMap((p) => this.files.get(p)?.good?.resources ?? []));
  }

  /** The merged resources of the files in force. */
  private mergedConfig(): MergedConfig {
    if (this.mergedStale) {
      this.merged = mergeFiles([...this.files.values()].flatMap((f) => (f.good ? [f.good] : [])));
      this.mergedStale = false;
    }
    return this.merged;
  }

  /** Takes what a read of `path` found; true if that changed the file's record. */
  private applyRead(path: string, read: FileRead): boolean {
    const previous = this.files.get(path);
    const checkedAt = new Date().toISOString();
    if (read.kind !== 'error') this.unreadAtStart.delete(path);
    else if (!this.started) this.unreadAtStart.set(path, read.message);
    if (read.kind === 'gone') {
      this.emptyOnce.delete(path);
      if (!previous) return false;
      this.logger.info({ file: path }, 'config file removed');
      this.setFile(path, undefined);
      this.options.history?.recordConfig(path, 'removed', {});
      return true;
    }
    // The first time this process reads a file, the version in force is the one the store accepted
    // last (an earlier run served it): it is what the file is known to claim (claims.ts), and what
    // stays in force if the file is now broken or held back.
    const stored = previous ? undefined : this.options.history?.lastAcceptedText(path);

    if (read.kind === 'error') {
      const errors: ConfigIssue[] = [{ line: 0, message: read.message }];
      // The same failure again (a recheck) is no change: it would only re-read the file forever.
      if (previous && previous.text === undefined && sameIssues(previous.errors, errors)) return false;
      this.logger.warn({ file: path }, formatIssue(path, errors[0] as ConfigIssue));
      const base = previous ? inForce(previous) : this.storedVersion(path, stored, checkedAt);
      this.setFile(path, { ...base, checkedAt, errors, warnings: [], text: undefined });
      return true;
    }
    const text = read.text;
    // An empty file that used to define something is far more often a save caught half-way than an
    // intent to drop it all; deleting the file is the way to remove what it defined. Found so, it is
    // read again after the quiet period: the save's write, whose event comes with it, is then taken
    // without an error in between. Still empty then, and not written meanwhile, it is rejected. (A
    // file rewritten in place as often as the quiet period can be caught half-way by the read again
    // too: each of its saves is a write seen since.)
    const emptied = text.trim() === '' && Boolean(previous?.good?.resources.length);
    if (!emptied) this.emptyOnce.delete(path); // also when the save wrote back the same text
    if (previous && previous.text === text) return false;
    const writes = this.watcher.writesSeen(path);
    if (emptied && this.emptyOnce.get(path) !== writes) {
      this.emptyOnce.set(path, writes);
      this.watcher.readAgain(path);
      return false;
    }
    this.emptyOnce.delete(path);
    const load = emptied ? emptyFileRejected(path) : loadConfigFile(path, text);
    for (const w of load.warnings) this.logger.warn({ file: path, line: w.line }, formatIssue(path, w));
    const base = previous
      ? inForce(previous)
      : stored === text && load.errors.length === 0
        ? { good: load, loadedAt: checkedAt, fromStore: true }
        : this.storedVersion(path, stored, checkedAt);
    if (load.errors.length === 0) {
      // Taken (or held back) by publish(), which sees every file's claims.
      const candidate: Candidate = { load, text, at: checkedAt, heldFor: undefined };
      this.setFile(path, { ...base, checkedAt, errors: [], warnings: load.warnings, text, candidate });
      return true;
    }
    for (const e of load.errors) this.logger.warn({ file: path, line: e.line }, formatIssue(path, e));
    this.logger.warn(
      { file: path, line: load.errors[0]?.line, errors: load.errors.length },
      base.good ? 'config file rejected; keeping its last good version' : 'config file rejected',
    );
    if (base.good && base.fromStore)
      this.logger.warn({ file: path }, 'serving the last accepted version of this file from the store');
    this.options.history?.recordConfig(path, 'rejected', {
      text,
      error: load.errors.map((e) => formatIssue(path, e)).join('; '),
    });
    this.setFile(path, { ...base, checkedAt, errors: load.errors, warnings: load.warnings, text });
    return true;
  }

  /**
   * A file's last accepted version from an earlier run, if it still loads. Leniently: a field an
   * earlier Portolan ignored, and this one rejects, must not take the version in force away.
   */
  private storedVersion(path: string, text: string | undefined, at: string): InForce {
    if (text === undefined) return NOTHING_IN_FORCE;
    const stored = loadConfigFile(path, text, { lenient: true });
    if (stored.errors.length > 0) return NOTHING_IN_FORCE;
    return { good: stored, loadedAt: at, fromStore: true };
  }

  /**
   * Takes every waiting candidate whose claims clash with no other file's, and holds back the
   * others with an error naming the holder (claims.ts).
   */
  private settleCandidates(): void {
    const versions: FileVersions[] = [...this.files].map(([path, f]) => ({
      path,
      good: f.good,
      candidate: f.candidate?.load,
    }));
    const { heldBack, conflicts } = resolveClaims(versions);
    this.claimConflicts = conflicts;
    for (const [path, f] of this.files) {
      const candidate = f.candidate;
      if (!candidate) continue;
      const issues = heldBack.get(path);
      if (!issues) {
        this.accept(path, f, candidate);
        continue;
      }
      const reason = issues.map((e) => formatIssue(path, e)).join('; ');
      if (candidate.heldFor !== reason) {
        for (const e of issues) this.logger.warn({ file: path, line: e.line }, formatIssue(path, e));
        this.logger.warn(
          { file: path, line: issues[0]?.line },
          f.good
            ? 'config file held back: it claims what another file holds; keeping its last good version'
            : 'config file held back: it claims what another file holds',
        );
        if (f.good && f.fromStore)
          this.logger.warn({ file: path }, 'serving the last accepted version of this file from the store');
        this.options.history?.recordConfig(path, 'rejected', { text: candidate.text, error: reason });
      }
      this.setFile(path, { ...f, errors: issues, candidate: { ...candidate, heldFor: reason } });
    }
  }

  private accept(path: string, f: FileRecord, candidate: Candidate): void {
    this.logger.info({ file: path, resources: candidate.load.resources.length }, 'config file loaded');
    this.options.history?.recordConfig(path, 'accepted', {
      text: candidate.text,
      resources: candidate.load.resources.map(resourceKey),
    });
    this.setFile(path, {
      good: candidate.load,
      loadedAt: candidate.at,
      fromStore: false,
      checkedAt: f.checkedAt,
      errors: [],
      warnings: f.warnings,
      text: f.text,
    });
  }

  /**
   * Applies an edit host by host when only the edited files' own hosts can change (incremental.ts);
   * returns false, having changed nothing, when the edit needs the full publish().
   */
  private publishEdit(edited: readonly FileChange[], files: readonly string[]): boolean {
    if (!this.published || this.claimConflicts.length > 0) return false;
    const steps: FileStep[] = edited.map(({ path, before }) => {
      const f = this.files.get(path);
      return { path, before, after: f?.candidate?.load ?? f?.good };
    });
    if (this.publishMeshConfigEdit(steps, files)) return true;
    const edit = planIncremental(steps, this.index);
    if (!edit) return this.publishWorkloadEdit(edited, steps, files);
    for (const { path } of edited) {
      const f = this.files.get(path);
      if (f?.candidate) this.accept(path, f, f.candidate);
    }
    const current = this.state.snapshot();
    const { snapshot } = buildSnapshot(edit.serviceEntries, []);
    const hosts = [...edit.hosts];
    // Layered maps: the new snapshot shares the old one's entries (model/layered-map.ts).
    const services = LayeredMap.of(current.services).with(hosts.map((h) => [h, snapshot.services.get(h)]));
    const endpoints = LayeredMap.of(current.endpoints).with(
      hosts.map((h) => [h, snapshot.services.has(h) ? (snapshot.endpoints.get(h) ?? []) : undefined]),
    );
    this.mergedStale = true;
    this.state.replace({ services, endpoints }, this.failure(), editTrigger(files), edit.hosts);
    return true;
  }

  /**
   * Applies an edit of files that define only traffic config (isMeshConfigEdit): the services stay
   * as published, and only the mesh config is put together again, from the files that define some
   * (a DestinationRule edit costs what the traffic config holds, not what the directory does).
   * False, having changed nothing, when the edit needs the full publish().
   */
  private publishMeshConfigEdit(steps: readonly FileStep[], files: readonly string[]): boolean {
    if (this.conflicts.length > 0 || !isMeshConfigEdit(steps, this.index)) return false;
    for (const { path } of steps) {
      const f = this.files.get(path);
      if (f?.candidate) this.accept(path, f, f.candidate);
    }
    const lists = this.meshLists();
    const warnings = [
      ...this.conversionWarnings,
      ...unknownSubsetWarnings(lists.virtualServices, lists.destinationRules, resolveHost),
    ];
    this.logWarnings(warnings);
    const previousMesh = this.mesh;
    // The services' lists stay as they are (stale or not: mergedConfig() knows).
    this.merged = { ...this.merged, ...lists };
    this.mesh = nextMeshConfig(previousMesh, this.merged);
    this.crossWarnings = warnings;
    // No service changed (nothing is emitted); a file now broken or mended still counts.
    this.state.replace(this.state.snapshot(), this.failure(), editTrigger(files), []);
    if (this.mesh.generation !== previousMesh.generation)
      this.configListeners.emit({ ...editTrigger(files), registries: [this.name], files });
    return true;
  }

  /**
   * Applies an edit of WorkloadEntry files by converting again only the ServiceEntries that select
   * an entry it changed (selection-index.ts); false, having changed nothing, when it cannot.
   */
  private publishWorkloadEdit(
    edited: readonly { path: string; before: FileLoad | undefined }[],
    steps: readonly FileStep[],
    files: readonly string[],
  ): boolean {
    const plan = planWorkloadEntries(steps, this.index);
    const change = plan && this.selection?.change(plan);
    if (!change) return false;
    const conversion = buildSnapshot(change.serviceEntries, change.workloadEntries);
    // A new cross-resource warning is the full publish's to record and log.
    if (conversion.warnings.length > 0 || conversion.conflicts.length > 0) return false;
    for (const { path } of edited) {
      const f = this.files.get(path);
      if (f?.candidate) this.accept(path, f, f.candidate);
    }
    change.commit();
    const current = this.state.snapshot();
    const hosts = [...conversion.snapshot.services.keys()];
    const services = LayeredMap.of(current.services).with(
      hosts.map((h) => [h, conversion.snapshot.services.get(h)]),
    );
    const endpoints = LayeredMap.of(current.endpoints).with(
      hosts.map((h) => [h, conversion.snapshot.endpoints.get(h) ?? []]),
    );
    this.mergedStale = true;
    this.state.replace({ services, endpoints }, this.failure(), editTrigger(files), hosts);
    return true;
  }

  /** With a file broken, the directory answered only in part. */
  private failure(): Error | undefined {
    const first = this.index.firstBroken();
    const issue = first === undefined ? undefined : this.files.get(first)?.errors[0];
    if (first === undefined) return undefined;
    return new Error(
      `${this.index.brokenCount()} config file(s) with errors${issue ? `, e.g. ${formatIssue(first, issue)}` : ''}`,
    );
  }

  /** Recomputes everything from the in-force file versions and publishes what changed (`files`: the edit). */
  private publish(files: readonly string[] = [], reuse?: MergedConfig): void {
    // `reuse`: the files are as they were (only the outside WorkloadEntries changed).
    if (!reuse) this.settleCandidates();
    const merged = reuse ?? mergeFiles([...this.files.values()].flatMap((f) => (f.good ? [f.good] : [])));
    this.mergedStale = false;
    const workloadEntries = this.withSourceEntries(merged.workloadEntries);
    const conversion = buildSnapshot(merged.serviceEntries, workloadEntries);
    const conflicts = [...this.claimConflicts, ...merged.conflicts, ...conversion.conflicts];
    this.selection =
      conflicts.length === 0 && conversion.warnings.length === 0
        ? new SelectionIndex(
            merged.serviceEntries,
            workloadEntries,
            (this.entrySource?.workloadEntries() ?? []).map(resourceKey),
          )
        : undefined;
    this.logNew(conflicts, this.conflicts, (c) => [
      { file: c.ignored.file, line: c.ignored.line, kept: c.kept, ignored: c.ignored },
      `${c.type === 'duplicate-host' ? 'host' : 'resource'} ${c.subject} defined twice; ignoring ${c.ignored.file}:${c.ignored.line}, keeping ${c.kept.file}:${c.kept.line}`,
    ]);
    const warnings = [
      ...conversion.warnings,
      ...unknownSubsetWarnings(merged.virtualServices, merged.destinationRules, resolveHost),
    ];
    this.logWarnings(warnings);
    this.conversionWarnings = conversion.warnings;

    const previousMesh = this.mesh;
    // Everything readable is updated before any listener runs.
    this.merged = merged;
    this.mesh = nextMeshConfig(previousMesh, merged);
    this.conflicts = conflicts;
    this.crossWarnings = warnings;
    // With a file broken, the directory answered only in part: published, but still failing, so
    // an edit elsewhere records neither a recovery nor a new failure.
    this.state.replace(conversion.snapshot, this.failure(), editTrigger(files));
    this.published = true;
    if (this.mesh.generation !== previousMesh.generation)
      this.configListeners.emit({ ...editTrigger(files), registries: [this.name], files });
  }

  private withSourceEntries(own: readonly WorkloadEntryResource[]): readonly WorkloadEntryResource[] {
    const extra = this.entrySource?.workloadEntries() ?? [];
    if (extra.length === 0) return own;
    const taken = new Set(own.map(resourceKey));
    return [...own, ...extra.filter((e) => !taken.has(resourceKey(e)))];
  }

  /** Logs the cross-resource warnings not logged already. */
  private logWarnings(warnings: readonly CrossResourceWarning[]): void {
    this.logNew(warnings, this.crossWarnings, (w) => [
      { file: w.resource.file, line: w.resource.line, resource: w.resource },
      w.message,
    ]);
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

const NOTHING_IN_FORCE: InForce = { good: undefined, loadedAt: null, fromStore: false };

function inForce(previous: FileRecord): InForce {
  return { good: previous.good, loadedAt: previous.loadedAt, fromStore: previous.fromStore };
}

function sameIssues(a: readonly ConfigIssue[], b: readonly ConfigIssue[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function emptyFileRejected(path: string): FileLoad {
  const message =
    'file is empty; its last good version stays in force (delete the file to remove what it defined)';
  return { path, errors: [{ line: 1, message }], warnings: [], resources: [], hostPosition: NO_POSITIONS };
}

/**
 * What caused a publish, for the push: the files of an edit. The watcher read them only after its
 * quiet period, so the push need not wait for one of its own (`debounced`).
 */
function editTrigger(files: readonly string[]): ChangeTrigger | undefined {
  return files.length > 0 ? { registries: [], files, debounced: true } : undefined;
}
