// The resources of a mesh config by key (`Kind/namespace/name`, types.ts resourceKey), for a config
// step's keys (config-change.ts). A step derives the next config's index from the previous one's by
// the resources it touched, so an edit costs what it touched, not what the config holds. Immutable:
// a derived index shares its base with the one it came from (a candidate config evaluated beside
// the one in force, as the diff does, takes nothing from it); the changes since the base are copied
// per step and folded into a new base once they outgrow a square root of the index, which keeps
// both a step's copy and the amortised rebuild small.
import type { MeshConfig } from './mesh-config.js';
import { MESH_KIND_LISTS, type MeshKindList } from './config-kinds.js';
import { resourceKey, type AnyConfigResource } from './types.js';

/** A resource in force, with its list. */
export interface Placed {
  readonly resource: AnyConfigResource;
  readonly list: MeshKindList;
}

const NO_CHANGES: ReadonlyMap<string, Placed | undefined> = new Map();

export class ConfigKeyIndex {
  private constructor(
    private readonly base: ReadonlyMap<string, Placed>,
    /** Keys set (a Placed) or removed (undefined) since `base`. */
    private readonly changes: ReadonlyMap<string, Placed | undefined>,
    readonly size: number,
  ) {}

  /** Every resource of `config` by key; undefined when two share one (a hand-made config). */
  static of(config: MeshConfig): ConfigKeyIndex | undefined {
    const base = new Map<string, Placed>();
    const count = resourceCount(config);
    for (const list of MESH_KIND_LISTS)
      for (const resource of config[list] ?? []) base.set(resourceKey(resource), { resource, list });
    return base.size === count ? new ConfigKeyIndex(base, NO_CHANGES, count) : undefined;
  }

  get(key: string): Placed | undefined {
    return this.changes.has(key) ? this.changes.get(key) : this.base.get(key);
  }

  *keys(): IterableIterator<string> {
    for (const key of this.base.keys()) if (!this.changes.has(key)) yield key;
    for (const [key, placed] of this.changes) if (placed) yield key;
  }

  /** This index with `updates` applied (a key to undefined: removed). */
  with(updates: ReadonlyMap<string, Placed | undefined>): ConfigKeyIndex {
    let size = this.size;
    const changes = new Map(this.changes);
    for (const [key, placed] of updates) {
      size += (placed ? 1 : 0) - (this.get(key) ? 1 : 0);
      changes.set(key, placed);
    }
    if (changes.size <= foldAt(size)) return new ConfigKeyIndex(this.base, changes, size);
    const base = new Map(this.base);
    for (const [key, placed] of changes) {
      if (placed) base.set(key, placed);
      else base.delete(key);
    }
    return new ConfigKeyIndex(base, NO_CHANGES, size);
  }
}

/** How many resources the config's lists hold. */
export function resourceCount(config: MeshConfig): number {
  let count = 0;
  for (const list of MESH_KIND_LISTS) count += (config[list] ?? []).length;
  return count;
}

/** Changes kept beside the base before they are folded into a new one. */
function foldAt(size: number): number {
  return 8 + 2 * Math.ceil(Math.sqrt(size));
}
