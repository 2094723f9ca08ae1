// What a step of the traffic config changed, by key: the hostnames whose VirtualServices or
// DestinationRules changed (resolved, as the mesh index's lookups name them), the kinds that
// changed, or everything. Measured from the resources the step touched only — their versions in
// force before and after — never by comparing every rule of the mesh; and this is the one place a
// resource's content is compared (the generation moves by it too, nextMeshConfig).
//
// Everything, where a per-host answer would be wrong: a changed rule with a wildcard host (`*`,
// `*.x`) reaches hosts no key names; VirtualServices or DestinationRules kept by the step that
// changed their relative order (among rules of equal standing the first in config order wins); and
// whether any route injects faults flipping (gRPC listeners carry a fault filter only then).
import type { MeshConfig } from './mesh-config.js';
import { MESH_KIND_LISTS, pickMeshLists, type MeshConfigLists, type MeshKindList } from './config-kinds.js';
import { configHasFaults, routesInjectFaults } from './faults.js';
import { resolveHost } from './hosts.js';
import { resourceKey, type AnyConfigResource } from './types.js';
import { resolvedHosts } from './virtual-service-index.js';
import { sameData } from '../model/change.js';

/** The keys of a config step, as a change event carries them (model/change.ts). */
export interface ConfigChangeKeys {
  /** Hostnames whose VirtualServices or DestinationRules changed. */
  readonly rules: ReadonlySet<string>;
  /** The kinds a resource of which was added, removed, changed or reordered. */
  readonly kinds: ReadonlySet<MeshKindList>;
  readonly everything: boolean;
}

export const NO_CONFIG_CHANGE: ConfigChangeKeys = Object.freeze({
  rules: new Set<string>(),
  kinds: new Set<MeshKindList>(),
  everything: false,
});

const EVERYTHING: ConfigChangeKeys = Object.freeze({ ...NO_CONFIG_CHANGE, everything: true });

/** Whether the keys name any change. */
export function isConfigChange(keys: ConfigChangeKeys): boolean {
  return keys.everything || keys.kinds.size > 0 || keys.rules.size > 0;
}

/**
 * The keys of the step from `prev` to `next`. `touched`: the resource keys (`Kind/namespace/name`,
 * types.ts resourceKey) of every resource whose version in force the step may have changed — what
 * the edited files defined before and after, and what a released claim let in; every other
 * resource must be in force unchanged, at its place, in both. Keys of other kinds are ignored.
 */
export function configChangeKeys(
  prev: MeshConfig,
  next: MeshConfig,
  touched: Iterable<string>,
): ConfigChangeKeys {
  if (prev === next) return NO_CONFIG_CHANGE;
  const before = placesOf(prev);
  const after = placesOf(next);
  if (!before || !after) return EVERYTHING; // two resources of one key: nothing to pair them by
  const rules = new Set<string>();
  const kinds = new Set<MeshKindList>();
  const moves = new Map<MeshKindList, Moves>();
  let faultsMayFlip = false;
  for (const key of new Set(touched)) {
    const a = before.get(key);
    const b = after.get(key);
    const placed = a ?? b;
    if (!placed) continue;
    movesOf(moves, placed.list).note(a?.at, b?.at);
    if (a && b && sameResource(a.resource, b.resource)) continue;
    kinds.add(placed.list);
    for (const version of [a?.resource, b?.resource]) {
      if (!version) continue;
      for (const host of ruleHosts(version)) {
        if (host.startsWith('*')) return EVERYTHING;
        rules.add(host);
      }
      if (version.kind === 'VirtualService' && routesInjectFaults(version)) faultsMayFlip = true;
    }
  }
  for (const [list, m] of moves) {
    if (!m.reordered()) continue;
    if (list === 'virtualServices' || list === 'destinationRules') return EVERYTHING;
    kinds.add(list);
  }
  // Only a changed VirtualService with faults, before or after, can flip the answer.
  if (faultsMayFlip && configHasFaults(prev) !== configHasFaults(next)) return EVERYTHING;
  return { rules, kinds, everything: false };
}

/**
 * The mesh config after a step to `lists`, and the step's keys. The generation moves only when
 * something changed: a resource that merely moved (another line or file, the same place in config
 * order) keeps it, so nothing is pushed, yet its new place is shown. `touched`: as for
 * configChangeKeys; absent, every resource of both is compared.
 */
export function meshConfigStep(
  previous: MeshConfig,
  lists: MeshConfigLists,
  touched?: Iterable<string>,
): { readonly config: MeshConfig; readonly keys: ConfigChangeKeys } {
  const draft: MeshConfig = { generation: previous.generation, ...pickMeshLists(lists) };
  const keys = configChangeKeys(previous, draft, touched ?? allKeys(previous, draft));
  const generation = previous.generation + (isConfigChange(keys) ? 1 : 0);
  const config = Object.freeze({ ...draft, generation });
  places.set(config, placesOf(draft)); // the next step's `previous`: indexed once
  return { config, keys };
}

/** The mesh config after a merge to `lists`, every resource compared (tools and tests). */
export function nextMeshConfig(previous: MeshConfig, lists: MeshConfigLists): MeshConfig {
  return meshConfigStep(previous, lists).config;
}

/** The same resource, as the generators see it: where it was read from (file, line) does not matter. */
export function sameResource(a: AnyConfigResource, b: AnyConfigResource): boolean {
  return (
    a === b ||
    (a.kind === b.kind &&
      a.apiVersion === b.apiVersion &&
      a.namespace === b.namespace &&
      a.name === b.name &&
      sameData(a.labels, b.labels) &&
      sameData(a.annotations, b.annotations) &&
      sameData(a.spec, b.spec))
  );
}

/** The hostnames a rule applies to, resolved; none for the kinds read wholesale. */
function ruleHosts(r: AnyConfigResource): readonly string[] {
  if (r.kind === 'VirtualService') return resolvedHosts(r);
  if (r.kind === 'DestinationRule') return [resolveHost(r.spec.host, r.namespace)];
  return [];
}

/** A resource in force, with its list and its place in it (config order). */
interface Placed {
  readonly resource: AnyConfigResource;
  readonly list: MeshKindList;
  readonly at: number;
}

/** Per config, its resources by key; undefined when two share one (a hand-made config). */
const places = new WeakMap<MeshConfig, ReadonlyMap<string, Placed> | undefined>();

function placesOf(config: MeshConfig): ReadonlyMap<string, Placed> | undefined {
  if (places.has(config)) return places.get(config);
  let out: Map<string, Placed> | undefined = new Map();
  let count = 0;
  for (const list of MESH_KIND_LISTS) {
    const resources: readonly AnyConfigResource[] = config[list] ?? [];
    count += resources.length;
    resources.forEach((resource, at) => out?.set(resourceKey(resource), { resource, list, at }));
  }
  if (out.size !== count) out = undefined;
  places.set(config, out);
  return out;
}

function allKeys(a: MeshConfig, b: MeshConfig): string[] {
  return [...(placesOf(a)?.keys() ?? []), ...(placesOf(b)?.keys() ?? [])];
}

function movesOf(moves: Map<MeshKindList, Moves>, list: MeshKindList): Moves {
  let m = moves.get(list);
  if (!m) moves.set(list, (m = new Moves()));
  return m;
}

/**
 * The touched resources of one list, by place: whether those kept by the step changed their order
 * relative to the others kept. A kept resource's rank among the kept is its place less the removed
 * (before) or added (after) resources ahead of it; the untouched keep their order by definition,
 * so the kept sequence is the same iff every touched kept resource keeps its rank.
 */
class Moves {
  private readonly kept: [number, number][] = [];
  private readonly removed: number[] = [];
  private readonly added: number[] = [];

  note(before: number | undefined, after: number | undefined): void {
    if (before !== undefined && after !== undefined) this.kept.push([before, after]);
    else if (before !== undefined) this.removed.push(before);
    else if (after !== undefined) this.added.push(after);
  }

  reordered(): boolean {
    const removed = this.removed.sort((x, y) => x - y);
    const added = this.added.sort((x, y) => x - y);
    return this.kept.some(([a, b]) => a - countBelow(removed, a) !== b - countBelow(added, b));
  }
}

/** How many of the sorted `values` are below `x`. */
function countBelow(values: readonly number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((values[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
