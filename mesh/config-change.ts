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
import {
  MESH_KIND_LISTS,
  meshListOf,
  pickMeshLists,
  type MeshConfigLists,
  type MeshKindList,
} from './config-kinds.js';
import { configKeyIndex, resourceCount, type ConfigKeyIndex, type Placed } from './config-key-index.js';
import { configHasFaults, routesInjectFaults } from './faults.js';
import { resolveHost } from './hosts.js';
import { resourceKey, type AnyConfigResource, type DestinationRuleResource } from './types.js';
import { noteDestinationRuleStep } from './destination-rule-index.js';
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
  const keys = new Set(touched);
  const after = indexOf(next);
  const measured =
    measure(prev, next, indexOf(prev), after, keys) ??
    measure(prev, next, configKeyIndex(prev), configKeyIndex(next), keys);
  return measured?.keys ?? EVERYTHING;
}

/**
 * The mesh config after a step to `lists`, and the step's keys. The generation moves only when
 * something changed: a resource that merely moved (another line or file, the same place in config
 * order) keeps it, so nothing is pushed, yet its new place is shown. `touched`: as for
 * configChangeKeys; absent, every resource of both is compared. `versions`: the resources the step
 * may have put in force under a touched key (the edited files' versions now); with them the next
 * config's key index is derived from the previous one's by the touched keys, else built whole. A
 * list the step left as it was (the same resources at the same places) is the previous config's
 * list itself, so what is derived from it per list (mesh-index.ts) is kept.
 */
export function meshConfigStep(
  previous: MeshConfig,
  lists: MeshConfigLists,
  touched?: Iterable<string>,
  versions?: Iterable<AnyConfigResource>,
): { readonly config: MeshConfig; readonly keys: ConfigChangeKeys } {
  const draft: MeshConfig = { generation: previous.generation, ...pickMeshLists(lists) };
  const keys = touched === undefined ? undefined : new Set(touched);
  const before = indexOf(previous);
  let after: ConfigKeyIndex | undefined;
  let measured: Measured | undefined;
  if (before && keys && versions) {
    after = derivedIndex(before, draft, keys, versions);
    if (after) measured = measure(previous, draft, before, after, keys);
  }
  const derived = measured !== undefined;
  if (!measured) {
    // The whole config indexed (no versions given, or they did not account for the step).
    after = configKeyIndex(draft);
    const all = keys ?? allKeys(before, after);
    measured = measure(previous, draft, before, after, all) ??
      measure(previous, draft, configKeyIndex(previous), after, all) ?? {
        keys: EVERYTHING,
        altered: new Set(MESH_KIND_LISTS),
      };
  }
  const generation = previous.generation + (isConfigChange(measured.keys) ? 1 : 0);
  const kept = keptLists(previous, draft, measured);
  const config = Object.freeze({ ...draft, ...kept, generation });
  // The next step's `previous`: indexed once. An index of the draft's own objects does not describe
  // a kept list's (the previous config's, equal but maybe other objects): left to be built. A
  // derived one does: its entries for a kept list are the previous config's.
  if (derived || Object.keys(kept).length === 0) places.set(config, after);
  if (derived && before && after) noteRuleStep(previous, config, before, after, keys as ReadonlySet<string>);
  return { config, keys: measured.keys };
}

/**
 * How a derived step changed the DestinationRules (the touched keys' versions before and after),
 * so the next list's index is derived from the previous one's (destination-rule-index.ts).
 */
function noteRuleStep(
  prev: MeshConfig,
  next: MeshConfig,
  before: ConfigKeyIndex,
  after: ConfigKeyIndex,
  touched: ReadonlySet<string>,
): void {
  if (prev.destinationRules === next.destinationRules) return;
  const removed: DestinationRuleResource[] = [];
  const added: DestinationRuleResource[] = [];
  for (const key of touched) {
    const a = before.get(key)?.resource;
    const b = after.get(key)?.resource;
    if (a === b) continue;
    if (a?.kind === 'DestinationRule') removed.push(a);
    if (b?.kind === 'DestinationRule') added.push(b);
  }
  noteDestinationRuleStep(prev.destinationRules, next.destinationRules, removed, added);
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

/** What a step changed: its keys, and the lists whose resources or their places differ. */
interface Measured {
  readonly keys: ConfigChangeKeys;
  readonly altered: ReadonlySet<MeshKindList>;
}

/**
 * The step's keys from the two indexes, reading only the touched keys; undefined when an index
 * names a resource its config does not hold where it should (an index from another config).
 */
function measure(
  prev: MeshConfig,
  next: MeshConfig,
  before: ConfigKeyIndex | undefined,
  after: ConfigKeyIndex | undefined,
  touched: Iterable<string>,
): Measured | undefined {
  const everything = { keys: EVERYTHING, altered: new Set(MESH_KIND_LISTS) };
  if (!before || !after) return everything; // two resources of one key: nothing to pair them by
  const at = { before: positionsIn(prev), after: positionsIn(next) };
  const rules = new Set<string>();
  const kinds = new Set<MeshKindList>();
  const altered = new Set<MeshKindList>();
  const moves = new Map<MeshKindList, Moves>();
  let faultsMayFlip = false;
  for (const key of touched) {
    const a = before.get(key);
    const b = after.get(key);
    const placed = a ?? b;
    if (!placed) continue;
    const from = a && at.before.of(a);
    const to = b && at.after.of(b);
    if (from === -1 || to === -1) return undefined;
    movesOf(moves, placed.list).note(from, to);
    if (a?.resource !== b?.resource || from !== to) altered.add(placed.list);
    if (a && b && sameResource(a.resource, b.resource)) continue;
    kinds.add(placed.list);
    for (const version of [a?.resource, b?.resource]) {
      if (!version) continue;
      for (const host of ruleHosts(version)) {
        if (host.startsWith('*')) return everything;
        rules.add(host);
      }
      if (version.kind === 'VirtualService' && routesInjectFaults(version)) faultsMayFlip = true;
    }
  }
  for (const [list, m] of moves) {
    if (!m.reordered()) continue;
    if (list === 'virtualServices' || list === 'destinationRules') return everything;
    kinds.add(list);
  }
  // Only a changed VirtualService with faults, before or after, can flip the answer.
  if (faultsMayFlip && configHasFaults(prev) !== configHasFaults(next)) return everything;
  return { keys: { rules, kinds, everything: false }, altered };
}

/**
 * The next config's index from the previous one's: each touched key set to the one of `versions`
 * that `next` holds, or removed. Undefined when that does not account for every resource of
 * `next` (a version in force from elsewhere, or two of one key).
 */
function derivedIndex(
  before: ConfigKeyIndex,
  next: MeshConfig,
  touched: ReadonlySet<string>,
  versions: Iterable<AnyConfigResource>,
): ConfigKeyIndex | undefined {
  const candidates = new Map<string, Placed[]>();
  for (const resource of versions) {
    const list = meshListOf(resource.kind);
    const key = list && resourceKey(resource);
    if (!list || !key || !touched.has(key)) continue;
    const those = candidates.get(key);
    if (those) those.push({ resource, list });
    else candidates.set(key, [{ resource, list }]);
  }
  const at = positionsIn(next);
  const updates = new Map<string, Placed | undefined>();
  for (const key of touched) {
    const inForce = candidates.get(key)?.find((p) => at.of(p) >= 0);
    if (inForce || before.get(key)) updates.set(key, inForce);
  }
  const after = before.with(updates);
  return after.size === resourceCount(next) ? after : undefined;
}

/** The lists of `next` the step left as they were in `prev`: `prev`'s own. */
function keptLists(prev: MeshConfig, next: MeshConfig, measured: Measured): Partial<MeshConfigLists> {
  const kept: Partial<Record<MeshKindList, readonly AnyConfigResource[]>> = {};
  for (const list of MESH_KIND_LISTS) {
    const old = prev[list];
    if (measured.altered.has(list) || !old || old === next[list]) continue;
    if (old.length === (next[list] ?? []).length) kept[list] = old;
  }
  return kept as Partial<MeshConfigLists>;
}

/** Per config, its resources by key; undefined when two share one (a hand-made config). */
const places = new WeakMap<MeshConfig, ConfigKeyIndex | undefined>();

function indexOf(config: MeshConfig): ConfigKeyIndex | undefined {
  if (places.has(config)) return places.get(config);
  const index = configKeyIndex(config);
  places.set(config, index);
  return index;
}

function allKeys(a: ConfigKeyIndex | undefined, b: ConfigKeyIndex | undefined): string[] {
  return [...(a?.keys() ?? []), ...(b?.keys() ?? [])];
}

/** Where a resource stands in its list of one config (config order); -1: not there. */
interface Positions {
  of(placed: Placed): number;
}

/** A few lookups scan the list (no allocation); more index it once. */
const SCANS_BEFORE_INDEXING = 8;

function positionsIn(config: MeshConfig): Positions {
  const scans = new Map<MeshKindList, number>();
  const indexed = new Map<MeshKindList, Map<AnyConfigResource, number>>();
  return {
    of({ resource, list }) {
      const resources: readonly AnyConfigResource[] = config[list] ?? [];
      let byResource = indexed.get(list);
      if (!byResource) {
        const n = (scans.get(list) ?? 0) + 1;
        scans.set(list, n);
        if (n <= SCANS_BEFORE_INDEXING) return resources.indexOf(resource);
        indexed.set(list, (byResource = new Map(resources.map((r, i) => [r, i]))));
      }
      return byResource.get(resource) ?? -1;
    },
  };
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
