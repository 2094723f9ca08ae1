// What the config directory knows of each file: the version in force, the last read's problems, and
// a validated version waiting to be taken (a candidate), kept apart from publishing. A read is taken
// here (take), candidates are taken or held back by the claims across files (settle, accept), and
// the records say what the files in force add up to (mergeAll, meshLists) and which resources'
// versions in force a step changed (takeTouched), for the step's change keys (mesh/config-change.ts).
import type { AcceptedFile, AcceptedFiles } from '../model/accepted-files.js';
import type { ConfigHistory } from '../model/config-history.js';
import type { Logger } from '../log/logger.js';
import { MESH_CONFIG_KINDS, type MeshConfigLists } from '../mesh/config-kinds.js';
import { resourceKey, type AnyConfigResource } from '../mesh/types.js';
import { resolveClaims, type FileVersions } from './claims.js';
import type { FileDebugState } from './debug-state.js';
import { FileIndex } from './file-index.js';
import type { FileStep } from './incremental.js';
import type { ConfigIssue } from './issue.js';
import { formatIssue, loadConfigFile, NO_POSITIONS, type FileLoad } from './load-file.js';
import { comparePaths, mergeFiles, type ConfigConflict, type MergedConfig } from './merge.js';
import type { FileRead } from './read-file.js';
import { MeshLists } from './mesh-lists.js';
import { decodeLoad, encodeLoad, loadFormat } from './stored-load.js';

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
  /** The last read's version, valid but not yet in force: settle() takes it or holds it back. */
  readonly candidate?: Candidate;
}

interface Candidate {
  readonly load: FileLoad;
  readonly text: string;
  readonly at: string;
  /** Why it is held back, once it has been (logged and recorded once per reason). */
  readonly heldFor: string | undefined;
  /** The text the store accepted last (a restart, the file unchanged): taking it records nothing. */
  readonly unchanged?: boolean;
  /** `load` is the stored one (stored-load.ts): nothing to store again. */
  readonly storedLoad?: boolean;
}

/** What the initial load did, for its one summary line (each file's own lines are at debug level). */
export interface StartSummary {
  readonly files: number;
  readonly resources: number;
  /** Files taken as they were when the store accepted them last (unchanged while the server was down). */
  readonly unchanged: number;
  readonly withErrors: number;
}

/** A file a step changed, with the version that was in force before. */
export interface FileChange {
  readonly path: string;
  readonly before: FileLoad | undefined;
}

export class FileRecords {
  private readonly files = new Map<string, FileRecord>();
  /** Claims, candidates and errors across `files`, kept by setFile(). */
  readonly index = new FileIndex();
  /** Files whose version in force defines some traffic config (kept by setFile()). */
  private readonly meshFiles = new Set<string>();
  /** The traffic config of `meshFiles`, kept from call to call of meshLists(). */
  private readonly traffic = new MeshLists();
  /** Keys of the traffic config resources whose file's version in force changed since takeTouched(). */
  private touched = new Set<string>();
  /** The traffic config resources of the versions in force that touched them (the step's index reads them). */
  private touchedVersions = new Set<AnyConfigResource>();
  /**
   * Files of the initial load that could not be read (a read error, not a verdict on content), with
   * why, until a read gets through or the file goes: while any is listed the registry is not ready.
   */
  private readonly unreadAtStart = new Map<string, string>();
  /** The initial load is over: later read errors are ordinary, and each accept is logged at info. */
  private started = false;
  /** Files the initial load took unchanged from the store (for the summary). */
  private unchangedAtStart = 0;

  /**
   * The store's accepted files, read once for the initial load (one query instead of one per file)
   * and dropped after it; undefined before it is read, and after.
   */
  private atStart: ReadonlyMap<string, AcceptedFile> | undefined;
  private atStartRead = false;

  constructor(
    private readonly logger: Logger,
    private readonly history: ConfigHistory | undefined,
    /** What the store keeps of each accepted file's load, to take an unchanged file without a parse. */
    private readonly accepted?: AcceptedFiles,
  ) {}

  /** The initial load is over (start() returned). */
  markStarted(): void {
    this.started = true;
    this.atStart = undefined;
  }

  /** What the initial load did (after it: start() calls this once). */
  startSummary(): StartSummary {
    let resources = 0;
    let withErrors = 0;
    for (const f of this.files.values()) {
      resources += f.good?.resources.length ?? 0;
      if (f.errors.length > 0) withErrors++;
    }
    return { files: this.files.size, resources, unchanged: this.unchangedAtStart, withErrors };
  }

  /** The version of `path` in force, if any. */
  inForce(path: string): FileLoad | undefined {
    return this.files.get(path)?.good;
  }

  /** Whether the text of `path`'s last read was `text`. */
  lastRead(path: string, text: string): boolean {
    return this.files.get(path)?.text === text;
  }

  /**
   * Takes what a read of `path` found; true if that changed the file's record. `emptied`: the read
   * found empty a file that defined something, and that stands (read-step.ts): it is rejected.
   */
  take(path: string, read: FileRead, emptied = false): boolean {
    const previous = this.files.get(path);
    const checkedAt = new Date().toISOString();
    if (read.kind !== 'error') this.unreadAtStart.delete(path);
    else if (!this.started) this.unreadAtStart.set(path, read.message);
    if (read.kind === 'gone') {
      if (!previous) return false;
      this.logger.info({ file: path }, 'config file removed');
      this.setFile(path, undefined);
      this.history?.recordConfig(path, 'removed', {});
      this.accepted?.removeLoad(path);
      return true;
    }
    // The first time this process reads a file, the version in force is the one the store accepted
    // last (an earlier run served it): it is what the file is known to claim (claims.ts), and what
    // stays in force if the file is now broken or held back.
    const stored = previous ? undefined : this.storedText(path);

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
    if (previous && previous.text === text) return false;
    // A restart, the file as the store accepted it last: its stored load, if this build made it.
    const storedLoad = stored === text ? this.storedLoad(path, text) : this.knownLoad(path, text);
    const load = emptied ? emptyFileRejected(path) : (storedLoad ?? loadConfigFile(path, text));
    for (const w of load.warnings) this.logger.warn({ file: path, line: w.line }, formatIssue(path, w));
    const base = previous
      ? inForce(previous)
      : stored === text && load.errors.length === 0
        ? { good: load, loadedAt: checkedAt, fromStore: true }
        : this.storedVersion(path, stored, checkedAt);
    if (load.errors.length === 0) {
      // Taken (or held back) by settle(), which sees every file's claims.
      const candidate: Candidate = {
        load,
        text,
        at: checkedAt,
        heldFor: undefined,
        ...(!previous && stored === text && { unchanged: true }),
        ...(storedLoad && { storedLoad: true }),
      };
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
    this.history?.recordConfig(path, 'rejected', {
      text,
      error: load.errors.map((e) => formatIssue(path, e)).join('; '),
    });
    this.setFile(path, { ...base, checkedAt, errors: load.errors, warnings: load.warnings, text });
    return true;
  }

  /** What an edit of `changes` makes of each file: the version before, and the one after if taken. */
  steps(changes: readonly FileChange[]): FileStep[] {
    return changes.map(({ path, before }) => {
      const f = this.files.get(path);
      return { path, before, after: f?.candidate?.load ?? f?.good };
    });
  }

  /** Takes the waiting candidates of `paths` as they stand (an edit whose claims settle: incremental.ts). */
  acceptCandidates(paths: Iterable<string>): void {
    for (const path of paths) {
      const f = this.files.get(path);
      if (f?.candidate) this.accept(path, f, f.candidate);
    }
  }

  /**
   * Takes every waiting candidate whose claims clash with no other file's, holds back the others
   * with an error naming the holder (claims.ts), and returns the clashes.
   */
  settle(): readonly ConfigConflict[] {
    const versions: FileVersions[] = [...this.files].map(([path, f]) => ({
      path,
      good: f.good,
      candidate: f.candidate?.load,
    }));
    const { heldBack, conflicts } = resolveClaims(versions);
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
        this.history?.recordConfig(path, 'rejected', { text: candidate.text, error: reason });
      }
      this.setFile(path, { ...f, errors: issues, candidate: { ...candidate, heldFor: reason } });
    }
    return conflicts;
  }

  /** The merged resources of the files in force. */
  mergeAll(): MergedConfig {
    return mergeFiles([...this.files.values()].flatMap((f) => (f.good ? [f.good] : [])));
  }

  /**
   * The traffic config of the files in force, as mergeFiles would list it (no conflicts stand): the
   * lists of the last call with the files changed since spliced in (mesh-lists.ts).
   */
  meshLists(): MeshConfigLists {
    return this.traffic.current((p) => this.files.get(p)?.good, this.meshFiles);
  }

  /**
   * The keys of traffic config resources whose file's version in force changed since the last call,
   * and those files' traffic config resources in force now.
   */
  takeTouched(): { readonly keys: ReadonlySet<string>; readonly versions: ReadonlySet<AnyConfigResource> } {
    const taken = { keys: this.touched, versions: this.touchedVersions };
    this.touched = new Set();
    this.touchedVersions = new Set();
    return taken;
  }

  /** With a file broken, the directory answered only in part. */
  failure(): Error | undefined {
    const first = this.index.firstBroken();
    if (first === undefined) return undefined;
    const issue = this.files.get(first)?.errors[0];
    return new Error(
      `${this.index.brokenCount()} config file(s) with errors${issue ? `, e.g. ${formatIssue(first, issue)}` : ''}`,
    );
  }

  /** The files of the initial load that could not be read, with why, by path. */
  unread(): string[] {
    return [...this.unreadAtStart]
      .sort(([a], [b]) => comparePaths(a, b))
      .map(([path, why]) => `${path} could not be read at start (${why})`);
  }

  debugFiles(): FileDebugState[] {
    return [...this.files.entries()]
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
  }

  private accept(path: string, f: FileRecord, candidate: Candidate): void {
    // At start, one summary line (registry.ts) instead of one line per file: 10,000 lines cost
    // 0.7 s of a start at 10,000 files. Errors and warnings stay per file, at every level.
    const fields = { file: path, resources: candidate.load.resources.length };
    if (this.started) this.logger.info(fields, 'config file loaded');
    else this.logger.debug(fields, 'config file loaded');
    // The store's last accepted text taken again at a restart: already its last accepted version,
    // and no change to record (a restart would otherwise write a row per file, and rewrite its text).
    if (candidate.unchanged && !this.started) this.unchangedAtStart++;
    else
      this.history?.recordConfig(path, 'accepted', {
        text: candidate.text,
        resources: candidate.load.resources.map(resourceKey),
      });
    if (!candidate.storedLoad && this.accepted) {
      const json = encodeLoad(candidate.load);
      if (json !== undefined) this.accepted.recordLoad(path, candidate.text, loadFormat(), json);
    }
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
   * A file's last accepted version from an earlier run, if it still loads. Leniently: a field an
   * earlier Portolan ignored, and this one rejects, must not take the version in force away.
   */
  private storedVersion(path: string, text: string | undefined, at: string): InForce {
    if (text === undefined) return NOTHING_IN_FORCE;
    const stored = this.storedLoad(path, text) ?? loadConfigFile(path, text, { lenient: true });
    if (stored.errors.length > 0) return NOTHING_IN_FORCE;
    return { good: stored, loadedAt: at, fromStore: true };
  }

  /** The store's last accepted text of `path`; during the initial load, from the one read of them all. */
  private storedText(path: string): string | undefined {
    if (!this.started && this.accepted) {
      if (!this.atStartRead) {
        this.atStartRead = true;
        this.atStart = this.accepted.all(loadFormat());
      }
      if (this.atStart) return this.atStart.get(path)?.text;
    }
    return this.history?.lastAcceptedText(path);
  }

  /** The stored load of `text`, the store's last accepted text of `path` (initial load only). */
  private storedLoad(path: string, text: string): FileLoad | undefined {
    const stored = this.atStart?.get(path);
    return stored?.load !== undefined && stored.text === text
      ? decodeLoad(path, text, stored.load)
      : undefined;
  }

  /** What exactly `text` loaded to elsewhere with this build (another replica's): initial load only. */
  private knownLoad(path: string, text: string): FileLoad | undefined {
    if (this.started || !this.accepted?.loadOf) return undefined;
    const json = this.accepted.loadOf(path, text, loadFormat());
    return json === undefined ? undefined : decodeLoad(path, text, json);
  }

  private setFile(path: string, record: FileRecord | undefined): void {
    const previous = this.files.get(path);
    this.index.update(path, previous, record);
    if (previous?.good !== record?.good) {
      this.traffic.changing(path, previous?.good);
      for (const load of [previous?.good, record?.good])
        for (const r of load?.resources ?? [])
          if (MESH_CONFIG_KINDS.has(r.kind)) this.touched.add(resourceKey(r));
      for (const r of previous?.good?.resources ?? []) this.touchedVersions.delete(r);
      for (const r of record?.good?.resources ?? [])
        if (MESH_CONFIG_KINDS.has(r.kind)) this.touchedVersions.add(r);
    }
    if (record) this.files.set(path, record);
    else this.files.delete(path);
    if (record?.good?.resources.some((r) => MESH_CONFIG_KINDS.has(r.kind))) this.meshFiles.add(path);
    else this.meshFiles.delete(path);
  }
}

const NOTHING_IN_FORCE: InForce = { good: undefined, loadedAt: null, fromStore: false };

function inForce(previous: FileRecord): InForce {
  return { good: previous.good, loadedAt: previous.loadedAt, fromStore: previous.fromStore };
}

function sameIssues(a: readonly ConfigIssue[], b: readonly ConfigIssue[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** What a file emptied while it defined something is, once the rechecks find it still empty (read-step.ts). */
export function emptyFileRejected(path: string): FileLoad {
  const message =
    'file is empty; its last good version stays in force (delete the file to remove what it defined)';
  return { path, errors: [{ line: 1, message }], warnings: [], resources: [], hostPosition: NO_POSITIONS };
}
