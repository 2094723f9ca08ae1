// A live mirror of one layout's two-level tree (ROOT → groups → instances [→ data]) over one session.
//
// ZooKeeper watches fire once; every read here leaves a new watch, and every event re-reads the node
// it names, so the watch is re-armed by the read that follows it. A node that does not exist yet is
// watched for its creation instead. node-zookeeper-client keeps one callback per path and function,
// so each path gets one stable watcher function, and re-reads never pile up callbacks.
//
// `load()` reads the whole tree into a fresh mirror (the registry's full resync). Events that arrive
// meanwhile are queued and replayed against that mirror once it is adopted, so a change that lands
// between a read and the adoption is not lost.
import type { TreeShape } from './layouts.js';
import { isConnectionError, type Watcher, type ZkSession } from './client.js';

/** group → instance node name → data (UTF-8; undefined when the layout does not read data). */
export type Mirror = Map<string, Map<string, string | undefined>>;

export function emptyMirror(): Mirror {
  return new Map();
}

export interface TreeHooks {
  /** The mirror changed after an event, in these groups (not called for load/adopt). */
  changed(groups: readonly string[]): void;
  /** A read after an event failed for a reason other than a lost connection. */
  failed(err: unknown): void;
}

type Key =
  { kind: 'root' } | { kind: 'group'; group: string } | { kind: 'leaf'; group: string; leaf: string };

export class TreeWatcher {
  private current: Mirror = new Map();
  private queued: Map<string, Key> | undefined;
  private closed = false;
  private readonly watchers = new Map<string, Watcher>();

  constructor(
    private readonly session: ZkSession,
    private readonly shape: TreeShape,
    private readonly hooks: TreeHooks,
  ) {}

  mirror(): Mirror {
    return this.current;
  }

  /** Reads everything with watches into a new mirror; events are queued until `adopt` or `abort`. */
  async load(): Promise<Mirror> {
    this.queued ??= new Map();
    const target: Mirror = new Map();
    const groups = await this.listChildren(this.shape.root, { kind: 'root' });
    await Promise.all(groups.map((group) => this.loadGroup(target, group)));
    return target;
  }

  /** Makes a loaded mirror current and replays the events that arrived while it was read. */
  adopt(mirror: Mirror): void {
    this.pruneWatchers(this.current, mirror);
    this.current = mirror;
    const queued = this.queued;
    this.queued = undefined;
    for (const key of queued?.values() ?? []) this.refresh(key);
  }

  /** A load failed: stop queueing (the next load re-reads everything anyway). */
  abort(): void {
    this.queued = undefined;
  }

  /** Ignores every later event (the session is gone). */
  close(): void {
    this.closed = true;
    this.queued = undefined;
  }

  /** Watches this mirror holds: the root's and each group's children, and each instance's data. */
  watchCount(): number {
    let count = 1 + this.current.size;
    if (this.shape.readsData) for (const leaves of this.current.values()) count += leaves.size;
    return count;
  }

  private async loadGroup(target: Mirror, group: string): Promise<void> {
    const leaves = new Map<string, string | undefined>();
    target.set(group, leaves);
    const names = await this.listChildren(this.shape.leavesPath(group), { kind: 'group', group });
    if (!this.shape.readsData) {
      for (const name of names) leaves.set(name, undefined);
      return;
    }
    await Promise.all(
      names.map(async (leaf) => {
        const data = await this.readLeaf(group, leaf);
        if (data !== undefined) leaves.set(leaf, data);
      }),
    );
  }

  /** Children with a child watch; for a missing node, no children and a watch for its creation. */
  private async listChildren(path: string, key: Key): Promise<string[]> {
    const watcher = this.watcherFor(key);
    // A node created between the two calls is caught by the retry; one deleted, by its watch.
    for (let attempt = 0; attempt < 3; attempt++) {
      const children = await this.session.children(path, watcher);
      if (children) return children.sort();
      if (!(await this.session.exists(path, watcher))) return [];
    }
    return [];
  }

  private async readLeaf(group: string, leaf: string): Promise<string | undefined> {
    const data = await this.session.data(
      `${this.shape.leavesPath(group)}/${leaf}`,
      this.watcherFor({ kind: 'leaf', group, leaf }),
    );
    return data?.toString('utf8');
  }

  private onEvent(key: Key): void {
    if (this.closed) return;
    if (this.queued) {
      this.queued.set(keyString(key), key);
      return;
    }
    this.refresh(key);
  }

  private refresh(key: Key): void {
    const work =
      key.kind === 'root'
        ? this.refreshRoot()
        : key.kind === 'group'
          ? this.refreshGroup(key.group)
          : this.refreshLeaf(key.group, key.leaf);
    work.then(
      (groups) => {
        if (groups.length > 0 && !this.closed) this.hooks.changed(groups);
      },
      (err: unknown) => {
        // A lost connection is followed by a full resync; anything else is the registry's to handle.
        if (!this.closed && !isConnectionError(err)) this.hooks.failed(err);
      },
    );
  }

  /** Each refresh resolves to the groups it changed (none: nothing changed). */
  private async refreshRoot(): Promise<string[]> {
    const mirror = this.current;
    const names = new Set(await this.listChildren(this.shape.root, { kind: 'root' }));
    if (mirror !== this.current) return [];
    const removed: string[] = [];
    for (const group of [...mirror.keys()]) {
      if (names.has(group)) continue;
      this.forgetGroup(group, mirror.get(group));
      mirror.delete(group);
      removed.push(group);
    }
    const added = [...names].filter((group) => !mirror.has(group));
    await Promise.all(added.map((group) => this.loadGroup(mirror, group)));
    return [...removed, ...added];
  }

  private async refreshGroup(group: string): Promise<string[]> {
    return (await this.groupChanged(group)) ? [group] : [];
  }

  private async groupChanged(group: string): Promise<boolean> {
    const mirror = this.current;
    const leaves = mirror.get(group);
    if (!leaves) return false;
    const names = new Set(await this.listChildren(this.shape.leavesPath(group), { kind: 'group', group }));
    if (mirror !== this.current || mirror.get(group) !== leaves) return false;
    let changed = false;
    for (const leaf of [...leaves.keys()]) {
      if (names.has(leaf)) continue;
      leaves.delete(leaf);
      this.watchers.delete(keyString({ kind: 'leaf', group, leaf }));
      changed = true;
    }
    const added = [...names].filter((leaf) => !leaves.has(leaf));
    if (!this.shape.readsData) {
      for (const leaf of added) leaves.set(leaf, undefined);
      return changed || added.length > 0;
    }
    // Each instance goes in as soon as it is read: its data watch may fire before the others are back.
    const read = await Promise.all(
      added.map(async (leaf) => {
        const data = await this.readLeaf(group, leaf);
        const live = mirror === this.current && mirror.get(group) === leaves;
        if (data !== undefined && live) leaves.set(leaf, data);
        return data !== undefined && live;
      }),
    );
    return changed || read.includes(true);
  }

  private async refreshLeaf(group: string, leaf: string): Promise<string[]> {
    return (await this.leafChanged(group, leaf)) ? [group] : [];
  }

  private async leafChanged(group: string, leaf: string): Promise<boolean> {
    const mirror = this.current;
    const leaves = mirror.get(group);
    if (!leaves?.has(leaf)) return false;
    const data = await this.readLeaf(group, leaf);
    if (mirror !== this.current || mirror.get(group) !== leaves || !leaves.has(leaf)) return false;
    if (data === undefined) {
      leaves.delete(leaf);
      return true;
    }
    if (leaves.get(leaf) === data) return false;
    leaves.set(leaf, data);
    return true;
  }

  private watcherFor(key: Key): Watcher {
    const id = keyString(key);
    let watcher = this.watchers.get(id);
    if (!watcher) {
      watcher = () => this.onEvent(key);
      this.watchers.set(id, watcher);
    }
    return watcher;
  }

  private forgetGroup(group: string, leaves: ReadonlyMap<string, unknown> | undefined): void {
    this.watchers.delete(keyString({ kind: 'group', group }));
    for (const leaf of leaves?.keys() ?? []) this.watchers.delete(keyString({ kind: 'leaf', group, leaf }));
  }

  /** Drops the watcher functions of nodes the new mirror no longer has (their watches have fired). */
  private pruneWatchers(previous: Mirror, next: Mirror): void {
    for (const [group, leaves] of previous) {
      const nextLeaves = next.get(group);
      if (!nextLeaves) {
        this.forgetGroup(group, leaves);
        continue;
      }
      for (const leaf of leaves.keys()) {
        if (!nextLeaves.has(leaf)) this.watchers.delete(keyString({ kind: 'leaf', group, leaf }));
      }
    }
  }
}

function keyString(key: Key): string {
  // Znode names cannot contain `/`, so it separates the parts unambiguously.
  return key.kind === 'root'
    ? 'root'
    : key.kind === 'group'
      ? `g/${key.group}`
      : `l/${key.group}/${key.leaf}`;
}
