// Watches a directory tree and hands batches of changed config files to a reload function: the
// initial scan as one batch, then every burst of events after `debounceMs` of quiet. Batches never
// overlap, and the reload reads each file's current state, so event order and duplicates do not matter.
//
// One fs.watch per directory; an event names the entry that changed, and only that entry is looked
// at: a change costs the same in a directory of 10 files as in one of 10,000 (chokidar re-read and
// stat-ed the whole directory on every event in it). An event on a `..` entry (`..data`, the
// Kubernetes ConfigMap swap) marks every file of that directory, since all of them may now resolve
// to new content; other hidden entries (editor swap files) are ignored. Events can be coalesced or dropped by the kernel in a burst, so every batch that
// changed something is read once more RECHECK_MS later; unchanged text costs a read and nothing else.
import { watch, type FSWatcher } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isConfigFile } from './load-file.js';

export interface DirWatcherOptions {
  readonly dir: string;
  readonly debounceMs: number;
  /**
   * Paths are relative to `dir`, `/`-separated; a path may name a file that no longer exists.
   * Resolves to whether any file differed from what was last read.
   */
  readonly reload: (paths: ReadonlySet<string>) => Promise<boolean>;
  readonly onError: (error: Error) => void;
}

const RECHECK_MS = 100;

export class DirWatcher {
  private readonly dir: string;
  /** Watched directories by relative path ('' is the root). */
  private readonly watchers = new Map<string, FSWatcher>();
  private started = false;
  private ready = false;
  private readonly dirty = new Set<string>();
  /** Files seen and not deleted since: what to reload when a whole directory disappears. */
  private readonly known = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private burstStartedAt = 0;
  private readonly recheck = new Set<string>();
  private recheckTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private busy = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: DirWatcherOptions) {
    this.dir = resolve(options.dir);
  }

  /** Resolves once the existing files have been loaded. Throws if `dir` is not a directory. */
  async start(): Promise<void> {
    const info = await stat(this.dir).catch((e: unknown) => {
      throw new Error(`config directory ${this.dir}: ${e instanceof Error ? e.message : String(e)}`);
    });
    if (!info.isDirectory()) throw new Error(`config directory ${this.dir} is not a directory`);
    this.started = true;
    await this.addDir('', new Set());
    this.ready = true;
    await this.enqueue(this.dirty);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    clearTimeout(this.recheckTimer);
    this.timer = this.recheckTimer = undefined;
    this.started = false;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await this.running;
    this.dirty.clear();
    this.recheck.clear();
    this.notifyIdle();
  }

  /** Resolves when no reload is pending or running. */
  settled(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolveIdle) => this.idleWaiters.push(resolveIdle));
  }

  /** Reads `path` (relative, `/`-separated) again, as if it had changed. */
  readAgain(path: string): void {
    if (this.started) this.markDirty(path);
  }

  /**
   * Watches `rel` and everything below it, marking the config files found. `seen`: the real paths
   * walked so far, so a symlink loop ends.
   */
  private async addDir(rel: string, seen: Set<string>): Promise<void> {
    const absolute = join(this.dir, rel);
    const real = await realpath(absolute).catch(() => undefined);
    if (real === undefined || seen.has(real) || this.watchers.has(rel) || !this.started) return;
    seen.add(real);
    try {
      const watcher = watch(absolute, { persistent: true }, (_type, name) => this.dirEvent(rel, name));
      watcher.on('error', (error) => this.watchError(rel, error));
      this.watchers.set(rel, watcher);
    } catch (e) {
      this.options.onError(e instanceof Error ? e : new Error(String(e)));
      return;
    }
    const entries = await readdir(absolute).catch(() => [] as string[]);
    for (const name of entries) {
      if (name.startsWith('.')) continue;
      const path = rel === '' ? name : `${rel}/${name}`;
      const info = await stat(join(this.dir, path)).catch(() => undefined);
      if (info?.isDirectory()) await this.addDir(path, seen);
      else if (isConfigFile(path)) this.fileSeen(path, true);
    }
  }

  /** Something changed at `name` in the directory `rel`: look at that entry alone. */
  private dirEvent(rel: string, name: string | Buffer | null): void {
    if (!this.started) return;
    if (name === null) {
      void this.addDir(rel, new Set()).then(() => this.markDirectory(rel)); // the kernel did not say
      return;
    }
    const entry = String(name);
    // kubelet's atomic writer (`..data`, `..2024_…`): a swap changes what every file here resolves
    // to. Other hidden entries are editors' swap files, and cost nothing.
    if (entry.startsWith('..')) return this.markDirectory(rel);
    if (entry.startsWith('.')) return;
    const path = rel === '' ? entry : `${rel}/${entry}`;
    void stat(join(this.dir, path))
      .catch(() => undefined)
      .then((info) => {
        if (!this.started) return;
        if (info?.isDirectory()) {
          if (!this.watchers.has(path)) void this.addDir(path, new Set());
          return;
        }
        if (this.watchers.has(path)) this.dirRemoved(path);
        if (isConfigFile(path)) this.fileSeen(path, info !== undefined);
      });
  }

  private watchError(rel: string, error: Error): void {
    // A watched directory that was removed ends its watcher; its parent's event reports the files.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EPERM') {
      this.dirRemoved(rel);
      return;
    }
    this.options.onError(error);
  }

  private fileSeen(path: string, exists: boolean): void {
    if (exists) this.known.add(path);
    else this.known.delete(path);
    this.markDirty(path);
  }

  private markDirectory(rel: string): void {
    for (const path of this.known) if (rel === '' || path.startsWith(`${rel}/`)) this.markDirty(path);
  }

  private dirRemoved(dir: string): void {
    for (const [rel, watcher] of this.watchers) {
      if (rel === dir || rel.startsWith(`${dir}/`)) {
        watcher.close();
        this.watchers.delete(rel);
      }
    }
    for (const path of this.known) {
      if (path.startsWith(`${dir}/`)) {
        this.known.delete(path);
        this.markDirty(path);
      }
    }
  }

  private markDirty(path: string): void {
    this.dirty.add(path);
    if (!this.ready || !this.started) return; // the initial scan is loaded as one batch by start()
    // Quiet-period debounce, but a steady stream of writes must not postpone reloads forever.
    const now = Date.now();
    if (this.timer === undefined) this.burstStartedAt = now;
    clearTimeout(this.timer);
    const maxWait = Math.max(1000, 10 * this.options.debounceMs);
    const delay = Math.min(this.options.debounceMs, Math.max(0, this.burstStartedAt + maxWait - now));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.enqueue(this.dirty);
    }, delay);
  }

  private recheckLater(paths: ReadonlySet<string>): void {
    for (const path of paths) this.recheck.add(path);
    clearTimeout(this.recheckTimer);
    this.recheckTimer = setTimeout(() => {
      this.recheckTimer = undefined;
      void this.enqueue(this.recheck);
    }, RECHECK_MS);
  }

  /** Reloads (and empties) `source` after any batch already running. */
  private enqueue(source: Set<string>): Promise<void> {
    this.running = this.running.then(async () => {
      if (source.size === 0) return;
      const batch = new Set(source);
      source.clear();
      this.busy = true;
      try {
        const changed = await this.options.reload(batch);
        if (changed && this.started) this.recheckLater(batch);
      } catch (e) {
        this.options.onError(e instanceof Error ? e : new Error(String(e)));
      } finally {
        this.busy = false;
      }
    });
    void this.running.then(() => this.notifyIdle());
    return this.running;
  }

  private isIdle(): boolean {
    const pending = this.timer !== undefined || this.recheckTimer !== undefined || this.dirty.size > 0;
    return !this.busy && (!pending || !this.started);
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
