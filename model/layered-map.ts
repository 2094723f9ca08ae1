// An immutable map whose next version costs what changed: a shared base Map plus a small map of
// the changes made since it. Catalogs and registry snapshots change a host or two per generation
// and used to copy their 10,000-entry maps each time; here a version copies only its changes, and
// folds them into a new base once they outgrow about √size (so the copy per change stays O(√N)
// amortised, and lookups one extra Map probe). Reads are plain Map reads; nothing is mutated
// after construction, so every version stays valid for whoever holds it. Values are never
// undefined (undefined in with() removes a key).

const GONE: unique symbol = Symbol('gone');
type Slot<V> = V | typeof GONE;

export class LayeredMap<K, V> implements ReadonlyMap<K, V> {
  private constructor(
    private readonly base: ReadonlyMap<K, V>,
    private readonly changes: ReadonlyMap<K, Slot<V>>,
    readonly size: number,
  ) {}

  /** `map` as a LayeredMap; the map is shared, so it must not change afterwards. */
  static of<K, V>(map: ReadonlyMap<K, V>): LayeredMap<K, V> {
    if (map instanceof LayeredMap) return map as LayeredMap<K, V>;
    return new LayeredMap<K, V>(map, new Map<K, Slot<V>>(), map.size);
  }

  /** This map with `updates` applied (undefined: remove the key); this one is unchanged. */
  with(updates: Iterable<readonly [K, V | undefined]>): LayeredMap<K, V> {
    const changes = new Map<K, Slot<V>>(this.changes);
    let size = this.size;
    for (const [key, value] of updates) {
      const slot = changes.get(key);
      const had = slot !== undefined ? slot !== GONE : this.base.has(key);
      if (value === undefined) {
        if (!had) continue;
        size--;
        changes.set(key, GONE);
      } else {
        if (!had) size++;
        changes.set(key, value);
      }
    }
    if (changes.size <= 32 + Math.sqrt(this.base.size)) return new LayeredMap<K, V>(this.base, changes, size);
    return new LayeredMap<K, V>(fold(this.base, changes), new Map<K, Slot<V>>(), size);
  }

  get(key: K): V | undefined {
    const changed = this.changes.get(key);
    if (changed !== undefined) return changed === GONE ? undefined : changed;
    return this.base.get(key);
  }

  has(key: K): boolean {
    const changed = this.changes.get(key);
    if (changed !== undefined) return changed !== GONE;
    return this.base.has(key);
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }

  /** Base order, a changed value in its key's place, then the added keys in the order added. */
  *entries(): MapIterator<[K, V]> {
    for (const [key, value] of this.base) {
      const changed = this.changes.get(key);
      if (changed === undefined) yield [key, value];
      else if (changed !== GONE) yield [key, changed];
    }
    for (const [key, changed] of this.changes) {
      if (changed !== GONE && !this.base.has(key)) yield [key, changed];
    }
    return undefined;
  }

  *keys(): MapIterator<K> {
    for (const [key] of this.entries()) yield key;
    return undefined;
  }

  *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
    return undefined;
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }
}

/**
 * `base` with `changes` applied, as one new Map in entries() order: a native copy of the base (no
 * per-entry generator step or pair), a changed key set in its place, added keys appended in order.
 */
function fold<K, V>(base: ReadonlyMap<K, V>, changes: ReadonlyMap<K, Slot<V>>): Map<K, V> {
  const next = new Map<K, V>(base);
  for (const [key, slot] of changes) {
    if (slot === GONE) next.delete(key);
    else next.set(key, slot);
  }
  return next;
}
