// Which entries a directory tree holds, kept current with one `fs.watch` per directory, and what is
// written to its regular files: inotify reports entries added, removed or renamed (`rename`, which
// names the entry) and regular files written in place (`change`, which names the file) on the
// directory's one watch. So an edit costs the same in a directory of 10,000 files as in one of 10 —
// unlike chokidar's directory watching, which re-reads and lstat()s every entry of a directory on
// every event in it (chokidar 4, `_handleRead`), and made an edit cost ~0.1 ms per file beside it —
// and a regular file needs no watch of its own. A symlink's target is written where the directory
// cannot see it (a ConfigMap volume's `..data/`): such an entry is reported as not plain, for a
// watcher of its own (chokidar, in watcher.ts).
import { watch, type FSWatcher } from 'node:fs';
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';

export interface DirTreeEvents {
  /**
   * A non-directory entry was found or checked (`exists`), or is gone. Paths are absolute. `plain`: a
   * regular file, whose writes this tree reports (`changed`); anything else needs a watch of its own.
   */
  readonly entry: (path: string, exists: boolean, plain: boolean) => void;
  /** A regular file reported by `entry` was written in place (or its attributes changed). */
  readonly changed: (path: string) => void;
  /** A directory that was watched is gone (with everything under it). */
  readonly dirGone: (dir: string) => void;
  readonly error: (error: Error) => void;
}

export class DirTree {
  private readonly dirs = new Map<string, FSWatcher>();
  /** Real paths of watched directories (a symlink loop is followed once), and the reverse. */
  private readonly realOf = new Map<string, string>();
  private readonly reals = new Set<string>();
  private readonly checking = new Set<string>();
  private readonly checkAgain = new Set<string>();
  /** Regular files in watched directories (absolute paths): their writes are reported. */
  private readonly plain = new Set<string>();
  /** The device of each watched directory: a regular file listed in it is on the same one. */
  private readonly devices = new Map<string, number>();
  private closed = false;

  constructor(
    private readonly root: string,
    /** Whether an absolute path is outside what is watched (hidden segments, say). */
    private readonly ignored: (path: string) => boolean,
    private readonly events: DirTreeEvents,
  ) {}

  /** Watches the tree and reports every non-directory entry in it (`entry(path, true)`). */
  async start(): Promise<void> {
    await this.addDir(this.root);
  }

  close(): void {
    this.closed = true;
    for (const watcher of this.dirs.values()) watcher.close();
    this.dirs.clear();
    this.realOf.clear();
    this.reals.clear();
    this.plain.clear();
    this.devices.clear();
  }

  /**
   * The device `path` is on, when it is a regular file this tree listed (a file lives on its
   * directory's filesystem; a symlink or a mount point may lead anywhere: undefined).
   */
  deviceOf(path: string): number | undefined {
    return this.plain.has(path) ? this.devices.get(dirname(path)) : undefined;
  }

  /** Looks at `path` again and reports what it is now (a file's watcher saw it go, say). */
  check(path: string): void {
    if (this.closed || this.ignored(path)) return;
    if (this.checking.has(path)) {
      this.checkAgain.add(path);
      return;
    }
    this.checking.add(path);
    void this.inspect(path).finally(() => {
      this.checking.delete(path);
      if (this.checkAgain.delete(path)) this.check(path);
    });
  }

  private async inspect(path: string): Promise<void> {
    // lstat first: a symlink is followed (stat) to tell a directory, but is never plain.
    const link = await lstat(path).catch(() => undefined);
    const info = link?.isSymbolicLink() ? await stat(path).catch(() => undefined) : link;
    if (this.closed) return;
    if (info?.isDirectory()) {
      this.plain.delete(path);
      if (!this.dirs.has(path)) await this.addDir(path);
      return;
    }
    if (this.dirs.has(path)) this.removeDir(path);
    this.found(path, info !== undefined, link?.isFile() === true);
  }

  private found(path: string, exists: boolean, plain: boolean): void {
    if (exists && plain) this.plain.add(path);
    else this.plain.delete(path);
    this.events.entry(path, exists, plain);
  }

  /** Watches `dir` before listing it, so an entry created meanwhile is seen one way or the other. */
  private async addDir(dir: string): Promise<void> {
    const real = await realpath(dir).catch(() => undefined);
    if (this.closed || real === undefined || this.dirs.has(dir)) return;
    if (this.reals.has(real)) return; // a symlink back into the tree
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: true }, (type, name) => this.onEvent(dir, type, name));
    } catch (e) {
      this.events.error(watchError(dir, e));
      return;
    }
    watcher.on('error', (e) => {
      // The directory itself went away (its parent's watcher reports that) or cannot be watched.
      if (this.dirs.get(dir) === watcher) this.removeDir(dir);
      if (!isGone(e)) this.events.error(watchError(dir, e));
    });
    this.dirs.set(dir, watcher);
    const info = await stat(dir).catch(() => undefined);
    if (info) this.devices.set(dir, info.dev);
    this.realOf.set(dir, real);
    this.reals.add(real);
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (this.closed || this.ignored(path)) continue;
      // A regular file needs no stat; symlinks and anything else are looked at.
      if (entry.isFile()) this.found(path, true, true);
      else await this.inspect(path);
    }
  }

  private onEvent(dir: string, type: string, name: string | Buffer | null): void {
    if (type === 'change') return this.written(dir, name);
    // Without a name (platforms that cannot say), list the directory again.
    if (name === null) return this.relist(dir);
    this.check(join(dir, name.toString()));
  }

  /** A write in place (or an attribute change): reported for a regular file this tree knows. */
  private written(dir: string, name: string | Buffer | null): void {
    if (name !== null) {
      const path = childPath(dir, name.toString());
      if (this.plain.has(path)) this.events.changed(path);
      return;
    }
    for (const path of this.plainIn(dir)) this.events.changed(path);
  }

  /** Checks every entry `dir` lists, and every regular file it held that it no longer lists. */
  private relist(dir: string): void {
    void readdir(dir)
      .then((names) => {
        const listed = new Set(names.map((name) => join(dir, name)));
        for (const path of listed) this.check(path);
        for (const path of this.plainIn(dir)) if (!listed.has(path)) this.check(path);
      })
      .catch(() => this.check(dir));
  }

  /** The regular files directly in `dir` (only where a platform's events carry no name). */
  private plainIn(dir: string): string[] {
    const prefix = `${dir}/`;
    return [...this.plain].filter((path) => path.startsWith(prefix) && !path.includes('/', prefix.length));
  }

  private removeDir(dir: string): void {
    const prefix = `${dir}/`;
    for (const path of this.plain) if (path.startsWith(prefix)) this.plain.delete(path);
    for (const [path, watcher] of this.dirs) {
      if (path !== dir && !path.startsWith(prefix)) continue;
      watcher.close();
      this.dirs.delete(path);
      this.devices.delete(path);
      this.reals.delete(this.realOf.get(path) ?? '');
      this.realOf.delete(path);
    }
    this.events.dirGone(dir);
  }
}

/** `join(dir, name)` for an event's name (one entry, never `.` or `..`): every write asks. */
function childPath(dir: string, name: string): string {
  return name.includes(sep) || dir.endsWith(sep) ? join(dir, name) : `${dir}${sep}${name}`;
}

function isGone(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'EPERM';
}

function watchError(dir: string, e: unknown): Error {
  const code = (e as NodeJS.ErrnoException).code;
  const hint =
    code === 'ENOSPC'
      ? ' (the inotify watch limit: raise fs.inotify.max_user_watches)'
      : code === 'EMFILE'
        ? ' (too many open files: raise the limit, ulimit -n)'
        : '';
  return new Error(`watching ${dir}: ${e instanceof Error ? e.message : String(e)}${hint}`);
}
