// The resources of a mesh config by key (`Kind/namespace/name`, types.ts resourceKey), for a config
// step's keys (config-change.ts). A step derives the next config's index from the previous one's by
// the resources it touched (a LayeredMap: the next version copies only its changes), so an edit
// costs what it touched, not what the config holds. Every version stays valid: a candidate config
// evaluated beside the one in force, as the diff does, takes nothing from it.
import { LayeredMap } from '../model/layered-map.js';
import type { MeshConfig } from './mesh-config.js';
import { MESH_KIND_LISTS, type MeshKindList } from './config-kinds.js';
import { resourceKey, type AnyConfigResource } from './types.js';

/** A resource in force, with its list. */
export interface Placed {
  readonly resource: AnyConfigResource;
  readonly list: MeshKindList;
}

export type ConfigKeyIndex = LayeredMap<string, Placed>;

/** Every resource of `config` by key; undefined when two share one (a hand-made config). */
export function configKeyIndex(config: MeshConfig): ConfigKeyIndex | undefined {
  const base = new Map<string, Placed>();
  for (const list of MESH_KIND_LISTS)
    for (const resource of config[list] ?? []) base.set(resourceKey(resource), { resource, list });
  return base.size === resourceCount(config) ? LayeredMap.of(base) : undefined;
}

/** How many resources the config's lists hold. */
export function resourceCount(config: MeshConfig): number {
  let count = 0;
  for (const list of MESH_KIND_LISTS) count += (config[list] ?? []).length;
  return count;
}
