// Watches a directory tree and hands batches of changed config files to a reload function: the
// initial scan as one batch, then every burst of events after `debounceMs` of quiet. Batches never
// overlap, and the reload reads each file's current state, so event order and duplicates do not matter.
//
// `DirTree` watches each directory (one `fs.watch` each): entries added and removed, and writes to
// its regular files, which it names. So an edit costs the same whatever else its directory holds, and
// a regular file costs no watch, no stat and no timer of its own (chokidar spent a stat on the
// thread pool and a 5 ms timer on every event: ~0.5 ms of CPU per edit, docs/benchmarks.md). chokidar
// watches the files that are not regular files — symlinks, such as a ConfigMap volume's keys, whose
// targets are written and swapped where their directory's watch cannot see them.
//
// chokidar drops a file's change events for 50 ms after one it emitted, so the end of an in-place
// write (truncate, then write) can go unreported. A batch that changed something is therefore read
// once more RECHECK_MS later: the files whose change chokidar did drop events after (it counts them:
// ChangeThrottle), and symlinks the tree has just found, which chokidar may not have watched in time
// for their first writes. A regular file is never read twice: its directory reports every write, and
// was watched before the file was listed.
import { stat } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { DirTree } from './dir-tree.js';
import { listConfigFiles } from './rescan.js';
import { isConfigFile } from './load-file.js';
import { REAL_TIMERS, type TimerHandle, type Timers } from './timers.js';

export interface DirWatcherOptions {
  readonly dir: string;
  readonly debounceMs: number;
  /**
   * Paths are relative to `dir`, `/`-separated; a path may name a file that no longer exists.
   * Resolves to whether any file differed from what was last read.
   */
  readonly reload: (paths: ReadonlySet<string>) => Promise<boolean>;
  readonly onError: (error: Error) => void;
  /**
   * `reload` threw (a bug: each file's load has its own boundary, load-file.ts); `initial`: in the
   * first batch, which start() awaits. The batch's remaining files were not read.
   */
  readonly onReloadError: (error: Error, initial: boolean) => void;
  /** The quiet period's and the recheck's timers; default the real ones. */
  readonly timers?: Timers;
}

const RECHECK_MS = 100;

/** A `.` or `..` segment, an empty one, or a trailing `/`: left to path.relative. */
const UNNORMAL = /(?:^|\/)\.{0,2}(?:\/|$)/;

/**
 * chokidar's record of the 50 ms in which it drops a file's further change events: how many it
 * dropped. Private to chokidar (FSWatcher._throttled), so read defensively: without it, every
 * changed file is read again.
 */
interface ChangeThrottle {
  readonly count: number;
}

function changeThrottle(watcher: FSWatcher, path: string): ChangeThrottle | undefined {
  const throttled: unknown = Reflect.get(watcher, '_throttled');
  if (!(throttled instanceof Map)) return undefined;
  const change: unknown = throttled.get('change');
  if (!(change instanceof Map)) return undefined;
  const record: unknown = change.get(path);
  if (typeof record !== 'object' || record === null || !('count' in record)) return undefined;
  return typeof record.count === 'number' ? (record as ChangeThrottle) : undefined;
}

export class DirWatcher {
  private readonly dir: string;
  private files: FSWatcher | undefined;
  private tree: DirTree | undefined;
  /** Files chokidar watches (absolute paths): those that are not regular files. */
  private readonly watched = new Set<string>();
  /** Regular files (relative paths): the tree reports their writes, in full. */
  private readonly plain = new Set<string>();
  private ready = false;
  private readonly dirty = new Set<string>();
  /** Per file seen, the number of the last event reported for it (writesSeen); bounded by the files. */
  private readonly lastEvent = new Map<string, number>();
  private events = 0;
  /** Files seen and not deleted since: what to reload when a whole directory disappears. */
  private readonly known = new Set<string>();
  private readonly timers: Timers;
  private timer: TimerHandle = undefined;
  private burstStartedAt = 0;
  private readonly recheck = new Set<string>();
  /** Per file chokidar last reported changed: its drop count (undefined when it cannot be read). */
  private readonly throttles = new Map<string, ChangeThrottle | undefined>();
  private recheckTimer: TimerHandle = undefined;
  private running: Promise<void> = Promise.resolve();
  private busy = false;
  private idleWaiters: (() => void)[] = [];
  /** The rescan running, and the one that follows it for calls made meanwhile (rescan()). */
  private rescanning: Promise<void> | undefined;
  private rescanNext: Promise<void> | undefined;

  constructor(private readonly options: DirWatcherOptions) {
    this.dir = resolve(options.dir);
    this.timers = options.timers ?? REAL_TIMERS;
  }

  /** Resolves once the existing files have been loaded. Throws if `dir` is not a directory. */
  async start(): Promise<void> {
    const info = await stat(this.dir).catch((e: unknown) => {
      throw new Error(`config directory ${this.dir}: ${e instanceof Error ? e.message : String(e)}`);
    });
    if (!info.isDirectory()) throw new Error(`config directory ${this.dir} is not a directory`);

    const initial: { path: string; plain: boolean }[] = [];
    const tree = new DirTree(this.dir, (path) => this.isHidden(path), {
      entry: (path, exists, plain) => {
        if (this.files) this.fileSeen(path, exists, plain);
        else if (exists && isConfigFile(this.relative(path))) initial.push({ path, plain });
      },
      changed: (path) => {
        const relative = this.relative(path);
        if (this.files && isConfigFile(relative)) this.markDirty(relative);
      },
      dirGone: (dir) => this.dirRemoved(this.relative(dir)),
      error: (error) => this.options.onError(error),
    });
    this.tree = tree;
    await tree.start();
    // Only files: given a directory, chokidar would watch it too (the cost DirTree avoids). And only
    // the files we gave it: asked for a file that has just gone, chokidar watches its parent to see
    // it come back, and its parent's parent if that went too (up to /tmp for a test's directory),
    // and such a watch can outlive close(). Whether a file came back is the tree's to say.
    const linked = initial.filter((f) => !f.plain).map((f) => f.path);
    for (const path of linked) this.watched.add(path);
    const files = watch(linked, {
      ignoreInitial: true,
      persistent: true,
      ignored: (path) => !this.watched.has(path),
    });
    this.files = files;
    files.on('change', (path) => {
      const relative = this.relative(path);
      this.markDirty(relative);
      this.throttles.set(relative, changeThrottle(files, path));
    });
    // A file's watcher ends when the file goes; whether it came back is the tree's to say.
    files.on('unlink', (path) => {
      this.watched.delete(path);
      this.markDirty(this.relative(path));
      tree.check(path);
    });
    files.on('error', (error) =>
      this.options.onError(error instanceof Error ? error : new Error(String(error))),
    );
    // chokidar says `ready` once the paths it was given are watched; given none, it never does.
    if (linked.length > 0)
      await new Promise<void>((resolveReady) => files.once('ready', () => resolveReady()));
    for (const { path, plain } of initial) this.fileSeen(path, true, plain);
    this.ready = true;
    await this.enqueue(this.dirty, true);
  }

  async stop(): Promise<void> {
    this.timers.clearTimeout(this.timer);
    this.timers.clearTimeout(this.recheckTimer);
    this.timer = this.recheckTimer = undefined;
    this.tree?.close();
    this.tree = undefined;
    await this.files?.close();
    this.files = undefined;
    this.watched.clear();
    this.plain.clear();
    await this.running;
    this.dirty.clear();
    this.recheck.clear();
    this.throttles.clear();
    this.notifyIdle();
  }

  /** Resolves when no reload is pending or running. */
  settled(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolveIdle) => this.idleWaiters.push(resolveIdle));
  }

  /**
   * Reads now every config file the directory holds and every file known, whatever the events said
   * (a write whose event has not arrived, or that waits in the quiet period), after any batch
   * already running; resolves once that batch is applied. A call while a rescan runs waits for the
   * next one, shared with every call made meanwhile: a rescan that began before the call might have
   * listed the directory before the write.
   */
  rescan(): Promise<void> {
    if (this.rescanNext) return this.rescanNext;
    if (!this.rescanning) return this.startRescan();
    const next = this.rescanning
      .catch(() => undefined)
      .then(() => {
        this.rescanNext = undefined;
        return this.startRescan();
      });
    this.rescanNext = next;
    return next;
  }

  private startRescan(): Promise<void> {
    const run = this.rescanOnce().finally(() => {
      if (this.rescanning === run) this.rescanning = undefined;
    });
    this.rescanning = run;
    return run;
  }

  private async rescanOnce(): Promise<void> {
    if (!this.ready || !this.files) return; // not started, or stopped: nothing to take in
    const listed = await listConfigFiles(this.dir);
    const batch = new Set([...listed, ...this.known, ...this.dirty]);
    // What waited for the quiet period is in this batch; the timer finds nothing left to read.
    this.dirty.clear();
    await this.enqueue(batch);
  }

  /** Reads `path` (relative, `/`-separated) again, as if it had changed. */
  readAgain(path: string): void {
    if (this.files) this.markDirty(path, false);
  }

  /**
   * The device `path` (relative) is on, when it is a regular file in a listed directory: a first
   * read of it may then be synchronous on a local filesystem (read-file.ts), as later ones are.
   */
  deviceOf(path: string): number | undefined {
    return this.tree?.deviceOf(join(this.dir, path));
  }

  /** A number that moves on with every event reported for `path`: was it written since? */
  writesSeen(path: string): number {
    return this.lastEvent.get(path) ?? 0;
  }

  /**
   * The tree found `absolute`, or saw it go: read it again, and have chokidar watch it unless it is
   * a regular file (whose writes the tree reports).
   */
  private fileSeen(absolute: string, exists: boolean, plain: boolean): void {
    const path = this.relative(absolute);
    if (!isConfigFile(path)) return;
    if (exists) {
      this.known.add(path);
      if (plain) {
        this.plain.add(path);
        if (this.watched.delete(absolute)) this.files?.unwatch(absolute);
      } else {
        this.plain.delete(path);
        if (!this.watched.has(absolute)) {
          this.watched.add(absolute);
          this.files?.add(absolute);
        }
      }
    } else {
      // chokidar closes a file's watcher itself when the file goes (and says so: `unlink`).
      this.known.delete(path);
      this.plain.delete(path);
      this.watched.delete(absolute);
      this.lastEvent.delete(path);
    }
    this.markDirty(path, exists);
  }

  private dirRemoved(dir: string): void {
    for (const path of this.known) {
      if (path.startsWith(`${dir}/`)) {
        this.known.delete(path);
        this.plain.delete(path);
        // A directory moved out of the tree keeps its files: stop watching them.
        const absolute = resolve(this.dir, path);
        if (this.watched.delete(absolute)) this.files?.unwatch(absolute);
        this.lastEvent.delete(path);
        this.markDirty(path, false);
      }
    }
  }

  /** `reported`: an event for a file that exists (not a read asked for, nor a removal). */
  private markDirty(path: string, reported = true): void {
    this.dirty.add(path);
    if (reported) this.lastEvent.set(path, ++this.events);
    // Not (or no longer only) a change chokidar reported: read it again after the batch.
    this.throttles.delete(path);
    if (!this.ready || !this.files) return; // the initial scan is loaded as one batch by start()
    // Quiet-period debounce, but a steady stream of writes (one file after another, say) must not
    // postpone reloads: a burst is applied at most two quiet periods after its first event, and the
    // reload costs what changed, so applying a long burst in pieces costs no more than at once.
    const now = this.timers.now();
    if (this.timer === undefined) this.burstStartedAt = now;
    this.timers.clearTimeout(this.timer);
    const maxWait = 2 * this.options.debounceMs;
    const delay = Math.min(this.options.debounceMs, Math.max(0, this.burstStartedAt + maxWait - now));
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined;
      void this.enqueue(this.dirty);
    }, delay);
  }

  private recheckLater(paths: ReadonlySet<string>): void {
    for (const path of paths) if (!this.plain.has(path)) this.recheck.add(path);
    if (this.recheck.size === 0) return; // regular files only: nothing can have gone unreported
    this.timers.clearTimeout(this.recheckTimer);
    this.recheckTimer = this.timers.setTimeout(() => {
      this.recheckTimer = undefined;
      // By now (RECHECK_MS > chokidar's 50 ms) a reported file's drop count is final.
      for (const path of this.recheck) {
        const throttle = this.throttles.get(path);
        this.throttles.delete(path);
        if (throttle?.count === 0 || this.plain.has(path)) this.recheck.delete(path);
      }
      void this.enqueue(this.recheck);
    }, RECHECK_MS);
  }

  /** Reloads (and empties) `source` after any batch already running; `initial`: start()'s batch. */
  private enqueue(source: Set<string>, initial = false): Promise<void> {
    this.running = this.running.then(async () => {
      if (source.size === 0) return;
      const batch = new Set(source);
      source.clear();
      this.busy = true;
      try {
        const changed = await this.options.reload(batch);
        if (changed && this.files) this.recheckLater(batch);
      } catch (e) {
        this.options.onReloadError(e instanceof Error ? e : new Error(String(e)), initial);
      } finally {
        this.busy = false;
      }
    });
    void this.running.then(() => this.notifyIdle());
    return this.running;
  }

  private isIdle(): boolean {
    const pending = this.timer !== undefined || this.recheckTimer !== undefined || this.dirty.size > 0;
    return !this.busy && (!pending || !this.files);
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private relative(path: string): string {
    // The tree's paths are `dir` joined with names: below it, the rest is the answer (on POSIX).
    // Every file event asks, and path.relative resolves both paths each time.
    if (sep === '/' && path.startsWith(this.dir) && path[this.dir.length] === '/') {
      const rest = path.slice(this.dir.length + 1);
      if (!UNNORMAL.test(rest)) return rest;
    }
    return relative(this.dir, path).split(sep).join('/');
  }

  /** Hidden entries are editor swap files and Kubernetes ConfigMap internals (`..data`, `..2024_…`),
   * which would otherwise load every file twice. */
  private isHidden(absolute: string): boolean {
    return this.relative(absolute)
      .split('/')
      .some((part) => part.startsWith('.'));
  }
}
