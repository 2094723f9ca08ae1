// Who shares the resource cache's entries, and for how long they are kept. A share is one
// generator's entries for one view key (generator.viewKey: the part of the proxy its resources
// depend on): every proxy with that key shares them. Streams hold their share while open
// (ResourceCache.retain); a share no stream has held for IDLE_EVICT_MS is forgotten, its entries
// with it. A view key may depend on the mesh config (ResourceGenerator.viewKeyReads, EDS): when what
// it reads changes, that generator's holds are re-keyed, and the holds that moved to another share
// are reported once, so their streams re-evaluate the type there.
import type { GenerateContext, ResourceGenerator } from '../generators/generator.js';
import type { Proxy, ProxyKind } from '../proxy/proxy.js';
import { typeKey } from './type-keys.js';

/** A stream's hold on its share of one generator (ResourceCache.retain). */
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

/** How many streams hold a share, and when the last one let go. */
interface ShareUse {
  holders: number;
  releasedAt: number;
}

export class CacheShares {
  /** Per share (its ref): the streams holding it. */
  private readonly uses = new Map<string, ShareUse>();
  private readonly generatorIds = new Map<ResourceGenerator, string>();
  private readonly generatorsById = new Map<string, ResourceGenerator>();
  /** Per generator whose key reads the serving view (viewKeyReads): its open streams' holds, to re-key. */
  private readonly holds = new Map<ResourceGenerator, Set<Hold>>();
  /** Per such generator: what its keys read, in the serving view the holds are keyed for. */
  private readonly keyedFor = new Map<ResourceGenerator, unknown>();
  /** Holds moved to another share since movedHolds() last asked. */
  private readonly moved = new Set<Hold>();

  constructor(
    private readonly context: (proxy: Proxy) => GenerateContext,
    private readonly now: () => number,
  ) {}

  /** The generators seen so far. */
  generators(): Iterable<ResourceGenerator> {
    return this.generatorIds.keys();
  }

  retain(generator: ResourceGenerator, proxy: Proxy): ViewHold {
    // The serving view's context only for a key that reads it (EDS): most types' keys do not.
    const ctx = generator.viewKeyReads ? this.context(proxy) : undefined;
    const key = ctx ? keyOf(generator, proxy, ctx) : generator.viewKey(proxy);
    const hold = new Hold(this, generator, proxy, key, this.use(this.ref(generator, key)));
    if (ctx) {
      this.rekey(generator, ctx);
      let holds = this.holds.get(generator);
      if (!holds) this.holds.set(generator, (holds = new Set()));
      holds.add(hold);
    }
    return hold;
  }

  viewKey(generator: ResourceGenerator, proxy: Proxy): string {
    return keyOf(generator, proxy, this.context(proxy));
  }

  /**
   * A share's reference, the prefix of its entries' keys: a short id per generator, not its kind
   * and type URL, since thousands of keys are held.
   */
  ref(generator: ResourceGenerator, viewKey: string): string {
    let id = this.generatorIds.get(generator);
    if (id === undefined) {
      id = String(this.generatorIds.size);
      this.generatorIds.set(generator, id);
      this.generatorsById.set(id, generator);
    }
    return `${id}\0${viewKey}`;
  }

  /** Whether an open stream holds the share. */
  held(ref: string): boolean {
    return (this.uses.get(ref)?.holders ?? 0) > 0;
  }

  /** A share used without a stream holding it (a one-off read) counts as just released. */
  touch(ref: string): void {
    const use = this.uses.get(ref);
    if (!use) this.uses.set(ref, { holders: 0, releasedAt: this.now() });
    else if (use.holders <= 0) use.releasedAt = this.now();
  }

  /** Shares held by open streams, per kind and type. */
  viewCounts(): ViewCount[] {
    const counts = new Map<string, { kind: ProxyKind; typeUrl: string; views: number }>();
    for (const [ref, use] of this.uses) {
      if (use.holders <= 0) continue;
      const generator = this.generatorsById.get(ref.slice(0, ref.indexOf('\0')));
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
   * Re-keys the holds whose key reads the serving view where what it reads changed, and returns
   * the open holds that moved since the last call (their entries stay for the streams still in the
   * old share; the new share's are built as the moved streams ask).
   */
  movedHolds(): Set<ViewHold> {
    for (const [generator, holds] of this.holds) {
      const [first] = holds;
      if (first) this.rekey(generator, this.context(first.proxy));
    }
    const moved = new Set<ViewHold>();
    for (const hold of this.moved) if (!hold.released) moved.add(hold);
    this.moved.clear();
    return moved;
  }

  /** Forgets the shares no stream has held for IDLE_EVICT_MS; returns their refs. */
  forgetIdle(now: number): Set<string> {
    const idle = new Set<string>();
    for (const [ref, use] of this.uses)
      if (use.holders <= 0 && now - use.releasedAt >= IDLE_EVICT_MS) {
        idle.add(ref);
        this.uses.delete(ref);
      }
    return idle;
  }

  /** Counts one more holder of the share `ref`; returns its count, which the hold keeps to let go by. */
  private use(ref: string): ShareUse {
    let use = this.uses.get(ref);
    if (!use) this.uses.set(ref, (use = { holders: 0, releasedAt: 0 }));
    use.holders += 1;
    return use;
  }

  // By the count itself, not its ref: no string to build and look up as each stream closes. A held
  // share's count stays in `uses` (forgetIdle drops only shares without holders).
  private release(use: ShareUse): void {
    use.holders -= 1;
    use.releasedAt = this.now();
  }

  /** Re-keys the holds of `generator` when what its keys read is no longer what they were keyed for. */
  private rekey(generator: ResourceGenerator, ctx: GenerateContext): void {
    const reads = generator.viewKeyReads?.(ctx);
    if (this.keyedFor.get(generator) === reads) return;
    this.keyedFor.set(generator, reads);
    for (const hold of this.holds.get(generator) ?? []) {
      const key = keyOf(hold.generator, hold.proxy, this.context(hold.proxy));
      if (key === hold.key) continue;
      this.release(hold.use);
      hold.key = key;
      hold.use = this.use(this.ref(hold.generator, key));
      this.moved.add(hold);
    }
  }
}

class Hold implements ViewHold {
  released = false;

  constructor(
    private readonly shares: CacheShares,
    readonly generator: ResourceGenerator,
    readonly proxy: Proxy,
    public key: string,
    /** The count of the share `key` names, which this hold is one of. */
    public use: ShareUse,
  ) {}

  release(): void {
    this.shares.unhold(this);
  }
}

/** A generator's view key for `proxy`: given the serving view only when the generator says its key reads it. */
function keyOf(generator: ResourceGenerator, proxy: Proxy, ctx: GenerateContext): string {
  return generator.viewKeyReads ? generator.viewKey(proxy, ctx) : generator.viewKey(proxy);
}
