// Generate once, send many: encoded resources shared by every stream whose proxy has the same view
// (generator.viewKey), keyed by what they depend on and invalidated precisely. A change names
// hostnames. On an endpoint-only change, a resource that belongs to one hostname (a cluster, its load
// assignment) is rebuilt only when that hostname changed; resources spanning the catalog (Envoy's
// listeners) are rebuilt too. A service change rebuilds the entries that read a changed hostname
// from the catalog while they were built (traffic config can make one service's routes depend on
// another's ports: catalog-reads.ts records such reads), those that listed the catalog, and those
// spanning it. A config change narrowed to some hosts (ChangeEvent.config `hosts`: only their
// VirtualServices and DestinationRules changed) is a service change of those hosts, where reading a
// host includes looking up its rules, and it rebuilds too every resource of a generator that reads
// the config otherwise (ResourceGenerator.configByHost), and, when kinds read wholesale changed
// (NarrowedChange.kinds: an AuthorizationPolicy, a Sidecar), every resource of a generator that
// reads one of them (ResourceGenerator.wholeKinds). Either way, only resources whose bytes changed
// are reported. A config change that may reach anything drops everything.
//
// Only resources that exist are kept: a name that builds to nothing leaves no entry (a client naming
// 200,000 clusters that do not exist costs the server nothing shared), and an entry whose resource
// goes away is reported and dropped. A name that does not exist can only appear through a change of
// its own hostname (or of the config): streams keep such names themselves (the subscription index's
// missing names) and re-evaluate them when `ChangeSet.hosts` names their hostname. Entries are kept
// while a stream of their view is open (streams retain their views), and dropped, by a timer, once
// their view has had no stream for IDLE_EVICT_MS, or at once when a change touches them meanwhile
// (nothing is rebuilt for a view no stream holds). A view key may depend on the mesh config (EDS
// reads the proxy's locality only when a rule looks at it; ResourceGenerator.viewKeyReads): when
// what such a key reads changes, the holds of its generator are re-keyed, so streams move to their
// new view, and a stream that moved re-evaluates that type there (ChangeSet.moved). Other keys are
// computed without the view, and no config change visits their holds.
import { recordingReads, type CatalogReads, type WholeKind } from '../generators/view-memo.js';
import { configScope, type NarrowedChange } from './narrow-change.js';
import type { GenerateContext, ResourceGenerator, ServingView } from '../generators/generator.js';
import { parseClusterName, parseHostPort } from '../generators/names.js';
import type { Proxy, ProxyKind } from '../proxy/proxy.js';
import type { EncodedResource } from '../proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';

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
   * Holds that moved to another view (what their key reads changed): each one's stream re-evaluates
   * that type, whatever else changed. Absent when none did.
   */
  readonly moved?: ReadonlySet<ViewHold>;
}

export interface ChangedType {
  readonly kind: ProxyKind;
  readonly typeUrl: string;
  readonly names: ReadonlySet<string>;
}

// typeKey is computed per request and per response; the same few keys come back, so they are made
// once and reused (a reused string keeps its hash, which Map lookups by it need). Bounded: a client
// may name any type URL, and past MEMO_TYPE_KEYS the key is built each time.
const MEMO_TYPE_KEYS = 64;
const typeKeys = new Map<ProxyKind, Map<string, string>>();

export function typeKey(kind: ProxyKind, typeUrl: string): string {
  let byType = typeKeys.get(kind);
  if (!byType) typeKeys.set(kind, (byType = new Map<string, string>()));
  let key = byType.get(typeUrl);
  if (key === undefined) {
    key = `${kind} ${typeUrl}`;
    if (byType.size < MEMO_TYPE_KEYS) byType.set(typeUrl, key);
  }
  return key;
}

export function wildcardKey(kind: ProxyKind, typeUrl: string, viewKey: string): string {
  return `${kind}\0${typeUrl}\0${viewKey}`;
}

interface Entry {
  resource: EncodedResource;
  readonly generator: ResourceGenerator;
  /** A proxy with this entry's view: rebuilding for it rebuilds for all of them. */
  readonly proxy: Proxy;
  readonly host: string | undefined;
  /** this.viewRef(generator, viewKey): whether a stream still holds the view. */
  readonly view: string;
  /** What its last build read from the catalog (indexed in `readers` and `readsAll`). */
  reads: CatalogReads;
}

interface WildcardEntry {
  names: readonly string[];
  set: ReadonlySet<string>;
  readonly generator: ResourceGenerator;
  readonly proxy: Proxy;
  readonly view: string;
}

/** A stream's hold on its view of one generator (ResourceCache.retain). */
export interface ViewHold {
  /** generator.viewKey of the stream's proxy in the current serving view. */
  readonly key: string;
  /** Lets go of the view (once; more calls do nothing). */
  release(): void;
}

/** How many views (distinct view keys) open streams hold, per kind and type. */
export interface ViewCount {
  readonly kind: ProxyKind;
  readonly typeUrl: string;
  readonly views: number;
}

/** The entries of a view no stream has held for this long are dropped (a stream that comes back rebuilds them). */
export const IDLE_EVICT_MS = 5 * 60_000;
/** How often views are checked for that. */
const SWEEP_EVERY_MS = 60_000;

/** Types whose names belong to one hostname (hostOf): a change of that host may make one appear. */
const HOST_SCOPED: readonly [ProxyKind, string][] = [
  ['grpc', CLUSTER],
  ['grpc', ENDPOINT],
  ['grpc', LISTENER],
  ['grpc', ROUTE],
  ['envoy', CLUSTER],
  ['envoy', ENDPOINT],
];

export class ResourceCache {
  private readonly entries = new Map<string, Entry>();
  private readonly byHost = new Map<string, Set<string>>();
  private readonly global = new Set<string>();
  /** hostname → keys of entries whose last build read it from the catalog. */
  private readonly readers = new Map<string, Set<string>>();
  /** Keys of entries whose last build listed the catalog. */
  private readonly readsAll = new Set<string>();
  /** Keys of entries whose generator is not configByHost: any config change rebuilds them. */
  private readonly configWide = new Set<string>();
  private readonly wildcard = new Map<string, WildcardEntry>();
  /** Bumped per `kind type` whenever something of it changes: responses built at an older epoch are stale. */
  private readonly epochs = new Map<string, number>();
  /** Bumped when everything is dropped. */
  private allEpoch = 0;
  /** Per view: streams holding it, and when the last one let go. */
  private readonly views = new Map<string, ViewUse>();
  private readonly generatorIds = new Map<ResourceGenerator, string>();
  private readonly generatorsById = new Map<string, ResourceGenerator>();
  /** Per generator whose key reads the view (viewKeyReads): its open streams' holds, to re-key. */
  private readonly holds = new Map<ResourceGenerator, Set<Hold>>();
  /** Per such generator: what its keys read, in the view the holds are keyed for. */
  private readonly keyedFor = new Map<ResourceGenerator, unknown>();
  /** Holds moved to another view since the last apply: their streams re-evaluate their type. */
  private readonly moved = new Set<Hold>();
  private readonly sweeper: NodeJS.Timeout;
  hits = 0;
  misses = 0;

  constructor(
    private readonly context: (proxy: Proxy) => GenerateContext,
    private readonly now: () => number = Date.now,
  ) {
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
    const ctx = this.context(proxy);
    const key = keyOf(generator, proxy, ctx);
    const hold = new Hold(this, generator, proxy, key, this.hold(this.viewRef(generator, key)));
    if (generator.viewKeyReads) {
      this.rekey(generator, ctx);
      let holds = this.holds.get(generator);
      if (!holds) this.holds.set(generator, (holds = new Set()));
      holds.add(hold);
    }
    return hold;
  }

  /** The current view key of `proxy` for `generator` (what retain's hold carries). */
  viewKey(generator: ResourceGenerator, proxy: Proxy): string {
    return keyOf(generator, proxy, this.context(proxy));
  }

  /** Views held by open streams, per kind and type (the views a change may rebuild for). */
  viewCounts(): ViewCount[] {
    const counts = new Map<string, { kind: ProxyKind; typeUrl: string; views: number }>();
    for (const [view, v] of this.views) {
      if (v.holders <= 0) continue;
      const generator = this.generatorsById.get(view.slice(0, view.indexOf('\0')));
      if (!generator) continue;
      const tk = typeKey(generator.proxyKind, generator.typeUrl);
      const c = counts.get(tk);
      if (c) c.views += 1;
      else counts.set(tk, { kind: generator.proxyKind, typeUrl: generator.typeUrl, views: 1 });
    }
    return [...counts.values()];
  }

  /** Hold.release. */
  unhold(hold: Hold): void {
    if (hold.released) return;
    hold.released = true;
    this.holds.get(hold.generator)?.delete(hold);
    this.release(hold.use);
  }

  /**
   * A view's reference, the prefix of its entries' keys: a short id per generator, not its kind
   * and type URL, since thousands of keys are held.
   */
  private viewRef(generator: ResourceGenerator, viewKey: string): string {
    let id = this.generatorIds.get(generator);
    if (id === undefined) {
      id = String(this.generatorIds.size);
      this.generatorIds.set(generator, id);
      this.generatorsById.set(id, generator);
    }
    return `${id}\0${viewKey}`;
  }

  /** Counts one more holder of `view`; returns its count, which the hold keeps to let go by. */
  private hold(view: string): ViewUse {
    let v = this.views.get(view);
    if (!v) this.views.set(view, (v = { holders: 0, releasedAt: 0 }));
    v.holders += 1;
    return v;
  }

  // By the count itself, not its key: no key string to build and look up as each stream closes. A
  // held view's count stays in `views` (sweep drops only views without holders).
  private release(held: ViewUse): void {
    held.holders -= 1;
    held.releasedAt = this.now();
  }

  /** Re-keys the holds of `generator` when what its keys read is no longer what they were keyed for. */
  private rekey(generator: ResourceGenerator, view: ServingView): void {
    const reads = generator.viewKeyReads?.(view);
    if (this.keyedFor.get(generator) === reads) return;
    this.keyedFor.set(generator, reads);
    for (const hold of this.holds.get(generator) ?? []) {
      const key = keyOf(hold.generator, hold.proxy, this.context(hold.proxy));
      if (key === hold.key) continue;
      this.release(hold.use);
      hold.key = key;
      hold.use = this.hold(this.viewRef(hold.generator, key));
      this.moved.add(hold);
    }
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
    const key = `${this.viewRef(generator, viewKey)}\0${name}`;
    const cached = this.entries.get(key);
    if (cached) {
      this.hits += 1;
      return cached.resource;
    }
    this.misses += 1;
    const { value: resource, reads } = recordingReads(() => generator.build(this.context(proxy), name));
    if (!resource) return undefined; // nothing shared for a name that does not exist
    const host = hostOf(generator.proxyKind, generator.typeUrl, name);
    const view = this.viewRef(generator, viewKey);
    this.touchView(view);
    this.entries.set(key, { resource, generator, proxy, host, view, reads });
    this.indexReads(key, reads);
    if (!generator.configByHost) this.configWide.add(key);
    if (host === undefined) this.global.add(key);
    else {
      let keys = this.byHost.get(host);
      if (!keys) this.byHost.set(host, (keys = new Set()));
      keys.add(key);
    }
    return resource;
  }

  /** The names a wildcard subscription resolves to for this proxy, and the same as a set. */
  wildcardNames(
    generator: ResourceGenerator,
    proxy: Proxy,
    viewKey = this.viewKey(generator, proxy),
  ): { names: readonly string[]; set: ReadonlySet<string> } {
    const key = wildcardKey(generator.proxyKind, generator.typeUrl, viewKey);
    let entry = this.wildcard.get(key);
    if (!entry) {
      const names = generator.wildcardNames(this.context(proxy));
      const view = this.viewRef(generator, viewKey);
      this.touchView(view);
      entry = { names, set: new Set(names), generator, proxy, view };
      this.wildcard.set(key, entry);
    }
    return entry;
  }

  /** Applies a change to the cache (the catalog behind `context` is already the new one). */
  apply(event: NarrowedChange): ChangeSet {
    for (const [generator, holds] of this.holds) {
      const [first] = holds;
      if (first) this.rekey(generator, this.context(first.proxy));
    }
    // Entries of the views they left stay for the streams still there (or until swept); the new
    // views' entries are built as the moved streams ask for them.
    const moved = new Set<ViewHold>();
    for (const hold of this.moved) if (!hold.released) moved.add(hold);
    this.moved.clear();
    const config = configScope(event);
    if (config === 'all') {
      this.entries.clear();
      this.byHost.clear();
      this.global.clear();
      this.readers.clear();
      this.readsAll.clear();
      this.configWide.clear();
      this.wildcard.clear();
      this.allEpoch += 1;
      return { all: true, names: new Map(), types: [], wildcards: new Set(), hosts: new Set() };
    }
    const names = new Map<string, Set<string>>();
    const wildcards = new Set<string>();
    /** Types whose entries were dropped unheld: their epoch moves on, no name is reported. */
    const stale = new Set<string>();
    const rebuild = (key: string): void => {
      const entry = this.entries.get(key);
      if (!entry) return;
      const { generator } = entry;
      if (!affects(generator, event, entry.host !== undefined, entry.reads)) return;
      const tk = typeKey(generator.proxyKind, generator.typeUrl);
      if (!this.held(entry.view)) {
        // No stream holds its view (they closed; it waits out IDLE_EVICT_MS): dropped, not built
        // for no one (a stream that comes back builds it). No stream to tell, but the type's
        // shared responses may hold the old bytes: its epoch moves on.
        this.drop(key, entry);
        stale.add(tk);
        return;
      }
      const built = recordingReads(() =>
        generator.build(this.context(entry.proxy), key.slice(key.lastIndexOf('\0') + 1)),
      );
      const next = built.value;
      if (next) {
        this.unindexReads(key, entry.reads);
        entry.reads = built.reads;
        this.indexReads(key, built.reads);
      }
      if (next?.version === entry.resource.version) return;
      if (next) entry.resource = next;
      else this.drop(key, entry); // gone: reported below, and no longer kept
      let set = names.get(tk);
      if (!set) names.set(tk, (set = new Set()));
      set.add(key.slice(key.lastIndexOf('\0') + 1));
    };
    if (event.endpointsOnly) {
      for (const host of event.hostnames) for (const key of this.byHost.get(host) ?? []) rebuild(key);
      for (const key of this.global) rebuild(key);
    } else {
      // A service change can reach resources of other hostnames through the traffic config (a
      // route to another service's port): rebuild what read a changed hostname or listed the
      // catalog, besides the changed hostnames' own entries and those spanning the catalog. Keys
      // are gathered first: a rebuild re-indexes what it read.
      const keys = new Set<string>(this.global);
      for (const key of this.readsAll) keys.add(key);
      if (config) for (const key of this.configWide) keys.add(key);
      // A kind read wholesale reaches every resource of the generators that read it: found by a
      // pass over the entries, a check per entry, instead of dropping every entry of every type.
      const kinds = event.kinds;
      if (kinds && kinds.size > 0)
        for (const [key, entry] of this.entries) if (readsKinds(entry.generator, key, kinds)) keys.add(key);
      for (const host of event.hostnames) {
        for (const key of this.byHost.get(host) ?? []) keys.add(key);
        for (const key of this.readers.get(host) ?? []) keys.add(key);
      }
      for (const key of keys) rebuild(key);
    }
    for (const [key, entry] of this.wildcard) {
      const { generator } = entry;
      if (!affects(generator, event, false)) continue;
      if (!this.held(entry.view)) {
        // As for entries above: no stream to resolve it for.
        this.wildcard.delete(key);
        stale.add(typeKey(generator.proxyKind, generator.typeUrl));
        continue;
      }
      const next = generator.wildcardNames(this.context(entry.proxy));
      if (sameList(next, entry.names)) continue;
      entry.names = next;
      entry.set = new Set(next);
      wildcards.add(key);
      const tk = typeKey(generator.proxyKind, generator.typeUrl);
      if (!names.has(tk)) names.set(tk, new Set());
    }
    for (const tk of stale) if (!names.has(tk)) this.epochs.set(tk, (this.epochs.get(tk) ?? 0) + 1);
    const types: ChangedType[] = [];
    for (const [tk, set] of names) {
      this.epochs.set(tk, (this.epochs.get(tk) ?? 0) + 1);
      const [kind = 'grpc', typeUrl = ''] = tk.split(' ');
      types.push({ kind: kind as ProxyKind, typeUrl, names: set });
    }
    // A name of these hosts that built to nothing (and so has no entry) may exist now: a shared
    // response that lacked it must not be served again.
    for (const [kind, typeUrl] of HOST_SCOPED) {
      const tk = typeKey(kind, typeUrl);
      if (!names.has(tk)) this.epochs.set(tk, (this.epochs.get(tk) ?? 0) + 1);
    }
    return { all: false, names, types, wildcards, hosts: event.hostnames, ...(moved.size > 0 && { moved }) };
  }

  /** Drops the entries of views no stream has held for IDLE_EVICT_MS (run by a timer). */
  sweep(now = this.now()): void {
    const idle = new Set<string>();
    for (const [view, v] of this.views)
      if (v.holders <= 0 && now - v.releasedAt >= IDLE_EVICT_MS) {
        idle.add(view);
        this.views.delete(view);
      }
    if (idle.size === 0) return;
    for (const [key, entry] of this.entries) if (idle.has(entry.view)) this.drop(key, entry);
    for (const [key, entry] of this.wildcard) if (idle.has(entry.view)) this.wildcard.delete(key);
  }

  /** Whether an open stream holds the view. */
  private held(view: string): boolean {
    return (this.views.get(view)?.holders ?? 0) > 0;
  }

  /** A view used without a stream holding it (a one-off read) counts as just released. */
  private touchView(view: string): void {
    const v = this.views.get(view);
    if (!v) this.views.set(view, { holders: 0, releasedAt: this.now() });
    else if (v.holders <= 0) v.releasedAt = this.now();
  }

  private indexReads(key: string, reads: CatalogReads): void {
    if (reads.all) this.readsAll.add(key);
    for (const host of reads.hosts) {
      let keys = this.readers.get(host);
      if (!keys) this.readers.set(host, (keys = new Set()));
      keys.add(key);
    }
  }

  private unindexReads(key: string, reads: CatalogReads): void {
    this.readsAll.delete(key);
    for (const host of reads.hosts) {
      const keys = this.readers.get(host);
      keys?.delete(key);
      if (keys?.size === 0) this.readers.delete(host);
    }
  }

  private drop(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.global.delete(key);
    this.configWide.delete(key);
    this.unindexReads(key, entry.reads);
    if (entry.host === undefined) return;
    const keys = this.byHost.get(entry.host);
    keys?.delete(key);
    if (keys?.size === 0) this.byHost.delete(entry.host);
  }
}

/** How many streams hold a view, and when the last one let go. */
interface ViewUse {
  holders: number;
  releasedAt: number;
}

class Hold implements ViewHold {
  released = false;

  constructor(
    private readonly cache: ResourceCache,
    readonly generator: ResourceGenerator,
    readonly proxy: Proxy,
    public key: string,
    /** The count of the view `key` names, which this hold is one of. */
    public use: ViewUse,
  ) {}

  release(): void {
    this.cache.unhold(this);
  }
}

/** A generator's view key for `proxy`: given the view only when the generator says its key reads it. */
function keyOf(generator: ResourceGenerator, proxy: Proxy, view: GenerateContext): string {
  return generator.viewKeyReads ? generator.viewKey(proxy, view) : generator.viewKey(proxy);
}

/**
 * The hostname a resource belongs to, when it belongs to exactly one: clusters and load assignments
 * (`outbound|PORT|SUBSET|HOST`) for every kind, and proxyless listeners and routes (`HOST[:PORT]`).
 * Envoy's listeners and routes span many services: undefined.
 */
export function hostOf(kind: ProxyKind, typeUrl: string, name: string): string | undefined {
  if (typeUrl === CLUSTER || typeUrl === ENDPOINT) {
    const key = parseClusterName(name);
    return key?.direction === 'outbound' ? key.hostname : undefined;
  }
  if (kind === 'grpc' && (typeUrl === LISTENER || typeUrl === ROUTE)) return parseHostPort(name)?.hostname;
  return undefined;
}

/**
 * Whether an entry can depend on what `event` changed. Endpoint-only changes reach load assignments,
 * clusters (a LOGICAL_DNS cluster embeds its endpoint) and, for Envoy, everything that spans the
 * catalog (inbound listeners and clusters come from the endpoints at the proxy's IPs). Proxyless
 * listeners and routes, and wildcard lists of proxyless clients, depend on services alone.
 */
function affects(
  generator: ResourceGenerator,
  event: NarrowedChange,
  hostScoped: boolean,
  /** What the entry was built from, when it is one (not a wildcard list). */
  reads?: CatalogReads,
): boolean {
  if (!event.endpointsOnly) return true;
  if (generator.typeUrl === ENDPOINT) return hostScoped || generator.proxyKind === 'envoy';
  // A cluster reads a host's endpoints only to embed them (DNS): an EDS cluster stays as it is.
  if (generator.typeUrl === CLUSTER)
    return (
      (hostScoped || generator.proxyKind === 'envoy') && (reads?.readEndpointsOf(event.hostnames) ?? true)
    );
  return generator.proxyKind === 'envoy' && !hostScoped;
}

/** Whether a change of `kinds` may reach the entry `key` of a configByHost generator (configWide ones are rebuilt anyway). */
function readsKinds(generator: ResourceGenerator, key: string, kinds: ReadonlySet<WholeKind>): boolean {
  if (!generator.configByHost) return false;
  if (!generator.wholeKinds) return true;
  return generator.wholeKinds(key.slice(key.lastIndexOf('\0') + 1)).some((k) => kinds.has(k));
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
