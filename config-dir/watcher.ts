// Watches a directory tree and hands batches of changed config files to a reload function: the
// initial scan as one batch, then every burst of events after `debounceMs` of quiet. Batches never
// overlap, and the reload reads each file's current state, so event order and duplicates do not matter.
//
// chokidar drops a file's change events for 50 ms after one it emitted, so the end of an in-place
// write (truncate, then write) can go unreported. Every batch that changed something is therefore
// read once more RECHECK_MS later; unchanged text costs a read and nothing else.
import { stat } from 'node:fs/promises';
import { relative, resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
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
  private watcher: FSWatcher | undefined;
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

    const watcher = watch(this.dir, {
      ignoreInitial: false,
      // Hidden entries are editor swap files and Kubernetes ConfigMap internals (`..data`, `..2024_…`),
      // which would otherwise load every file twice.
      ignored: (path) =>
        this.relative(path)
          .split('/')
          .some((part) => part.startsWith('.')),
    });
    this.watcher = watcher;
    watcher.on('add', (path) => this.fileEvent(path, true));
    watcher.on('change', (path) => this.fileEvent(path, true));
    watcher.on('unlink', (path) => this.fileEvent(path, false));
    watcher.on('unlinkDir', (path) => this.dirRemoved(this.relative(path)));
    watcher.on('error', (error) =>
      this.options.onError(error instanceof Error ? error : new Error(String(error))),
    );
    await new Promise<void>((resolveReady) => watcher.once('ready', () => resolveReady()));
    this.ready = true;
    await this.enqueue(this.dirty);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    clearTimeout(this.recheckTimer);
    this.timer = this.recheckTimer = undefined;
    await this.watcher?.close();
    this.watcher = undefined;
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
    if (this.watcher) this.markDirty(path);
  }

  private fileEvent(absolute: string, exists: boolean): void {
    const path = this.relative(absolute);
    if (!isConfigFile(path)) return;
    if (exists) this.known.add(path);
    else this.known.delete(path);
    this.markDirty(path);
  }

  private dirRemoved(dir: string): void {
    for (const path of this.known) {
      if (path.startsWith(`${dir}/`)) {
        this.known.delete(path);
        this.markDirty(path);
      }
    }
  }

  private markDirty(path: string): void {
    this.dirty.add(path);
    if (!this.ready || !this.watcher) return; // the initial scan is loaded as one batch by start()
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
        if (changed && this.watcher) this.recheckLater(batch);
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
    return !this.busy && (!pending || !this.watcher);
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private relative(path: string): string {
    return relative(this.dir, path).split(sep).join('/');
  }
}
