// Generate once, send many: encoded resources shared by every stream whose proxy has the same view
// key (generator.viewKey), each rebuilt only when a change names something its last build read.
// Every build is given a context that records what it reads (generator.ts recordedBuild: the
// Services, endpoints and traffic rules of hostnames, config kinds read as a whole, listings of the
// catalog), and the cache files the resource under those keys in one index (dependents.ts). A change
// names keys (model/change.ts); apply rebuilds the resources and wildcard lists filed under them
// and reports only those whose bytes changed. A change of everything drops everything.
//
// Only resources that exist are kept: a name that builds to nothing leaves no entry (a client naming
// 200,000 clusters that do not exist costs the server nothing shared), and an entry whose resource
// goes away is reported and dropped. A name that does not exist can appear only through a change of
// the host it belongs to (ResourceGenerator.hostOf): streams keep such names themselves (the
// subscription index's missing names) and re-evaluate them when `ChangeSet.hosts` names their host.
// Entries are kept while a stream holds their share (cache-shares.ts), dropped once it has had
// none for IDLE_EVICT_MS, or at once when a change reaches them meanwhile (nothing is rebuilt for a
// share no stream holds).
import { changedHosts, type ChangeEvent } from '../../model/change.js';
import {
  recordedBuild,
  type GenerateContext,
  type ReadSet,
  type ResourceGenerator,
} from '../generators/generator.js';
import { nameHost } from '../generators/names.js';
import type { Proxy, ProxyKind } from '../proxy/proxy.js';
import type { EncodedResource } from '../proto/resource.js';
import { CacheShares, type ViewCount, type ViewHold } from './cache-shares.js';
import { DependentsIndex } from './dependents.js';
import { typeKey, wildcardKey } from './type-keys.js';

export { typeKey, wildcardKey } from './type-keys.js';
export { IDLE_EVICT_MS, type ViewCount, type ViewHold } from './cache-shares.js';
/** The host a resource name belongs to (the subscription index keeps missing names by it). */
export const hostOf = nameHost;

/** What a change did to the cache, for deciding which streams must hear about it. */
export interface ChangeSet {
  /** Everything may have changed (a config change): every stream re-evaluates everything. */
  readonly all: boolean;
  /** `kind type` → names whose bytes changed, appeared or disappeared. */
  readonly names: ReadonlyMap<string, ReadonlySet<string>>;
  /** The same as `names`, as a list with kind and type apart (what streams iterate). */
  readonly types: readonly ChangedType[];
  /** wildcardKey(kind, type, viewKey) of wildcard name lists that changed. */
  readonly wildcards: ReadonlySet<string>;
  /**
   * The hostnames the change concerns: names of these hosts that did not exist may exist now (a
   * stream that asked for one re-evaluates it). Empty when `all`.
   */
  readonly hosts?: ReadonlySet<string>;
  /**
   * Holds that moved to another share (what their view key reads changed): each one's stream re-evaluates
   * that type, whatever else changed. Absent when none did.
   */
  readonly moved?: ReadonlySet<ViewHold>;
}

export interface ChangedType {
  readonly kind: ProxyKind;
  readonly typeUrl: string;
  readonly names: ReadonlySet<string>;
}

/** How often shares are checked for idleness. */
const SWEEP_EVERY_MS = 60_000;

/** What the cache keeps of one build: a resource, or a wildcard subscription's list of names. */
interface Built {
  readonly generator: ResourceGenerator;
  /** A proxy of this entry's share: rebuilding for it rebuilds for all of them. */
  readonly proxy: Proxy;
  /** CacheShares.ref(generator, viewKey): whether a stream still holds the share. */
  readonly share: string;
  /** Its key in `entries` or `lists`. */
  readonly key: string;
  /** What its last build read (filed under in `dependents`). */
  reads: ReadSet;
}

interface Entry extends Built {
  readonly list: false;
  readonly name: string;
  resource: EncodedResource;
}

interface NameList extends Built {
  readonly list: true;
  names: readonly string[];
  set: ReadonlySet<string>;
}

/** What one apply found changed, as it goes. */
interface Tally {
  readonly names: Map<string, Set<string>>;
  readonly wildcards: Set<string>;
  /** Types whose entries were dropped unheld: their epoch moves on, no name is reported. */
  readonly stale: Set<string>;
}

export class ResourceCache {
  private readonly entries = new Map<string, Entry>();
  /** Wildcard name lists, by wildcardKey. */
  private readonly lists = new Map<string, NameList>();
  private readonly dependents = new DependentsIndex<Entry | NameList>();
  private readonly shares: CacheShares;
  /** Bumped per `kind type` whenever something of it changes: responses built at an older epoch are stale. */
  private readonly epochs = new Map<string, number>();
  /** Bumped when everything is dropped. */
  private allEpoch = 0;
  private readonly sweeper: NodeJS.Timeout;
  hits = 0;
  misses = 0;
  /** Builds a change made (resources and wildcard lists rebuilt because they read what it named). */
  rebuilds = 0;

  constructor(
    private readonly context: (proxy: Proxy) => GenerateContext,
    private readonly now: () => number = Date.now,
  ) {
    this.shares = new CacheShares(context, now);
    this.sweeper = setInterval(() => this.sweep(), SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  stop(): void {
    clearInterval(this.sweeper);
  }

  /**
   * A stream serves `proxy` the resources of `generator`: their entries stay while it does. The
   * hold's key follows the config; release it once when the stream closes.
   */
  retain(generator: ResourceGenerator, proxy: Proxy): ViewHold {
    return this.shares.retain(generator, proxy);
  }

  /** The current view key of `proxy` for `generator` (what retain's hold carries). */
  viewKey(generator: ResourceGenerator, proxy: Proxy): string {
    return this.shares.viewKey(generator, proxy);
  }

  /** Shares (distinct view keys) held by open streams, per kind and type: what a change may rebuild for. */
  viewCounts(): ViewCount[] {
    return this.shares.viewCounts();
  }

  epoch(kind: ProxyKind, typeUrl: string): number {
    return this.epochOf(typeKey(kind, typeUrl));
  }

  /** epoch() for a typeKey already at hand. */
  epochOf(typeKey: string): number {
    return this.allEpoch * 1e9 + (this.epochs.get(typeKey) ?? 0);
  }

  /**
   * The resource `name` for `proxy`, built on first use. `viewKey`: the key of a hold of this
   * generator and proxy (kept current by the cache), which spares computing it per call.
   */
  get(
    generator: ResourceGenerator,
    proxy: Proxy,
    name: string,
    viewKey = this.viewKey(generator, proxy),
  ): EncodedResource | undefined {
    const share = this.shares.ref(generator, viewKey);
    const key = `${share}\0${name}`;
    const cached = this.entries.get(key);
    if (cached) {
      this.hits += 1;
      return cached.resource;
    }
    this.misses += 1;
    const built = recordedBuild(this.context(proxy), (ctx) => generator.build(ctx, name));
    const resource = built.value;
    if (!resource) return undefined; // nothing shared for a name that does not exist
    this.shares.touch(share);
    const entry: Entry = { list: false, generator, proxy, share, key, name, resource, reads: built.reads };
    this.entries.set(key, entry);
    this.dependents.add(entry, entry.reads);
    return resource;
  }

  /**
   * What the cached build of `name` for `proxy` read, or undefined when none is cached; builds
   * nothing (the debug views ask it: admin/nack-marks.ts through nack-origins.ts).
   */
  readsOf(
    generator: ResourceGenerator,
    proxy: Proxy,
    name: string,
    viewKey = this.viewKey(generator, proxy),
  ): ReadSet | undefined {
    return this.entries.get(`${this.shares.ref(generator, viewKey)}\0${name}`)?.reads;
  }

  /** The names a wildcard subscription resolves to for this proxy, and the same as a set. */
  wildcardNames(
    generator: ResourceGenerator,
    proxy: Proxy,
    viewKey = this.viewKey(generator, proxy),
  ): { names: readonly string[]; set: ReadonlySet<string> } {
    const key = wildcardKey(generator.proxyKind, generator.typeUrl, viewKey);
    let list = this.lists.get(key);
    if (!list) {
      const built = recordedBuild(this.context(proxy), (ctx) => generator.wildcardNames(ctx));
      const share = this.shares.ref(generator, viewKey);
      this.shares.touch(share);
      const names = built.value;
      list = { list: true, generator, proxy, share, key, names, set: new Set(names), reads: built.reads };
      this.lists.set(key, list);
      this.dependents.add(list, list.reads);
    }
    return list;
  }

  /** Applies a change to the cache (the serving view behind `context` is already the new one). */
  apply(event: ChangeEvent): ChangeSet {
    const moved = this.shares.movedHolds();
    if (event.everything) {
      this.entries.clear();
      this.lists.clear();
      this.dependents.clear();
      this.allEpoch += 1;
      return { all: true, names: new Map(), types: [], wildcards: new Set(), hosts: new Set() };
    }
    // Gathered first: a rebuild re-files what it read.
    const reached = new Set<Entry | NameList>();
    this.dependents.collect(event, reached);
    const tally: Tally = { names: new Map(), wildcards: new Set(), stale: new Set() };
    for (const built of reached) {
      if (built.list) this.relist(built, tally);
      else this.rebuild(built, tally);
    }
    const { names } = tally;
    for (const tk of tally.stale) if (!names.has(tk)) this.bump(tk);
    const types: ChangedType[] = [];
    for (const [tk, set] of names) {
      this.bump(tk);
      const [kind = 'grpc', typeUrl = ''] = tk.split(' ');
      types.push({ kind: kind as ProxyKind, typeUrl, names: set });
    }
    // A name of these hosts that built to nothing (and so has no entry) may exist now: a shared
    // response that lacked it must not be served again.
    for (const generator of this.shares.generators()) {
      if (!generator.hostOf) continue;
      const tk = typeKey(generator.proxyKind, generator.typeUrl);
      if (!names.has(tk)) this.bump(tk);
    }
    const hosts = changedHosts(event);
    return { all: false, names, types, wildcards: tally.wildcards, hosts, ...(moved.size > 0 && { moved }) };
  }

  /** Drops the entries of shares no stream has held for IDLE_EVICT_MS (run by a timer). */
  sweep(now = this.now()): void {
    const idle = this.shares.forgetIdle(now);
    if (idle.size === 0) return;
    for (const entry of this.entries.values()) if (idle.has(entry.share)) this.drop(entry);
    for (const list of this.lists.values()) if (idle.has(list.share)) this.drop(list);
  }

  private rebuild(entry: Entry, tally: Tally): void {
    const { generator } = entry;
    const tk = typeKey(generator.proxyKind, generator.typeUrl);
    if (!this.shares.held(entry.share)) {
      // No stream holds its share (they closed; it waits out IDLE_EVICT_MS): dropped, not built
      // for no one (a stream that comes back builds it). No stream to tell, but the type's shared
      // responses may hold the old bytes: its epoch moves on.
      this.drop(entry);
      tally.stale.add(tk);
      return;
    }
    this.rebuilds += 1;
    const built = recordedBuild(this.context(entry.proxy), (ctx) => generator.build(ctx, entry.name));
    const next = built.value;
    if (next) this.refile(entry, built.reads);
    if (next?.version === entry.resource.version) return;
    if (next) entry.resource = next;
    else this.drop(entry); // gone: reported below, and no longer kept
    let set = tally.names.get(tk);
    if (!set) tally.names.set(tk, (set = new Set()));
    set.add(entry.name);
  }

  private relist(list: NameList, tally: Tally): void {
    const { generator } = list;
    const tk = typeKey(generator.proxyKind, generator.typeUrl);
    if (!this.shares.held(list.share)) {
      // As for entries: no stream to resolve it for.
      this.drop(list);
      tally.stale.add(tk);
      return;
    }
    this.rebuilds += 1;
    const built = recordedBuild(this.context(list.proxy), (ctx) => generator.wildcardNames(ctx));
    this.refile(list, built.reads);
    const next = built.value;
    if (sameList(next, list.names)) return;
    list.names = next;
    list.set = new Set(next);
    tally.wildcards.add(list.key);
    if (!tally.names.has(tk)) tally.names.set(tk, new Set());
  }

  private refile(built: Entry | NameList, reads: ReadSet): void {
    this.dependents.remove(built, built.reads);
    built.reads = reads;
    this.dependents.add(built, reads);
  }

  private drop(built: Entry | NameList): void {
    if (built.list) this.lists.delete(built.key);
    else this.entries.delete(built.key);
    this.dependents.remove(built, built.reads);
  }

  private bump(tk: string): void {
    this.epochs.set(tk, (this.epochs.get(tk) ?? 0) + 1);
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
