// When an edit can be applied to the published snapshot host by host, without merging every file
// and resolving every claim again: the common edit (a file of ServiceEntries with their own
// endpoints, rewritten) costs what that file defines, not what the directory holds.
//
// The edit qualifies when nothing outside the edited files can change: the edited files' old and
// new versions define only ServiceEntries with inline endpoints or none (no selector, so no other
// file's WorkloadEntries matter, and no cross-resource warning can appear), no duplicates inside a
// file (no conflict appears or goes), every key a new version claims is held by no other file (so
// the established-wins check would take it), every key an old version claimed was held by that
// file alone (no other file's shadowed copy steps in), and no other file has a candidate waiting
// that a released claim could let in. Anything else takes the full path (registry.ts publish).
//
// An edit of files that define only traffic config (VirtualServices, DestinationRules and the other
// kinds the mesh config holds) under the same claim rules leaves the services and endpoints as they
// are: only the mesh config is put together again (isMeshConfigEdit).
import { claimsOf } from './claims.js';
import { MESH_CONFIG_KINDS } from '../mesh/config-kinds.js';
import type { FileIndex } from './file-index.js';
import type { FileLoad } from './load-file.js';
import type { ServiceEntryResource, WorkloadEntryResource } from '../mesh/types.js';

/** One edited file: what it served before the edit, and what it serves after (undefined: nothing). */
export interface FileStep {
  readonly path: string;
  readonly before: FileLoad | undefined;
  readonly after: FileLoad | undefined;
}

export interface IncrementalEdit {
  /** Every hostname the edited files served before or serve after. */
  readonly hosts: ReadonlySet<string>;
  /** The ServiceEntries the edited files serve after the edit, in document order. */
  readonly serviceEntries: readonly ServiceEntryResource[];
}

export function planIncremental(steps: readonly FileStep[], index: FileIndex): IncrementalEdit | undefined {
  if (!claimsSettle(steps, index)) return undefined;
  const hosts = new Set<string>();
  const serviceEntries: ServiceEntryResource[] = [];
  for (const { before, after } of steps) {
    if (before === after) continue; // rejected, or unchanged: it serves what it served
    if (before) {
      const entries = simpleServiceEntries(before);
      if (!entries) return undefined;
      for (const se of entries) for (const host of se.spec.hosts) hosts.add(host);
    }
    if (after) {
      const entries = simpleServiceEntries(after);
      if (!entries) return undefined;
      for (const se of entries) for (const host of se.spec.hosts) hosts.add(host);
      serviceEntries.push(...entries);
    }
  }
  return { hosts, serviceEntries };
}

/** Whether the edit changes traffic config only, each version taken as it stands (no claim moves elsewhere). */
export function isMeshConfigEdit(steps: readonly FileStep[], index: FileIndex): boolean {
  for (const { before, after } of steps)
    for (const load of [before, after]) {
      if (!load) continue;
      if (!load.resources.every((r) => MESH_CONFIG_KINDS.has(r.kind))) return false;
      // One claim per resource key: fewer claims than resources means a duplicate (a conflict).
      if (claimsOf(load).size !== load.resources.length) return false;
    }
  return claimsSettle(steps, index);
}

/**
 * Whether each edited file's new version can be taken as it stands and its old one let go: no
 * other file waits to be taken, every key a new version claims is held by no other file (nor by
 * two edited files), and every key an old version claimed was held by that file alone (no other
 * file's shadowed copy steps in).
 */
function claimsSettle(steps: readonly FileStep[], index: FileIndex): boolean {
  const edited = new Set(steps.map((s) => s.path));
  for (const path of index.pendingPaths()) if (!edited.has(path)) return false;
  const claimedAfter = new Set<string>();
  for (const { path, before, after } of steps) {
    if (before === after) continue;
    if (before)
      for (const key of claimsOf(before).keys()) {
        const holders = index.claimantsOf(key);
        if (holders.size !== 1 || !holders.has(path)) return false;
      }
    if (after)
      for (const key of claimsOf(after).keys()) {
        for (const holder of index.claimantsOf(key)) if (holder !== path) return false;
        if (claimedAfter.has(key)) return false; // two edited files claim it: resolve in full
        claimedAfter.add(key);
      }
  }
  return true;
}

/** The file's ServiceEntries, if it defines nothing else, no selector and no duplicate. */
function simpleServiceEntries(load: FileLoad): readonly ServiceEntryResource[] | undefined {
  let hostCount = 0;
  const entries: ServiceEntryResource[] = [];
  for (const r of load.resources) {
    if (r.kind !== 'ServiceEntry' || r.spec.workloadSelector) return undefined;
    hostCount += r.spec.hosts.length;
    entries.push(r);
  }
  // claimsOf keeps one claim per key: fewer claims than resources + hosts means a duplicate.
  if (claimsOf(load).size !== entries.length + hostCount) return undefined;
  return entries;
}

/** One edit of files that define only WorkloadEntries: the entries before and after it. */
export interface WorkloadEntryEdit {
  readonly removed: readonly WorkloadEntryResource[];
  readonly added: readonly WorkloadEntryResource[];
}

/**
 * An edit of files whose old and new versions define only WorkloadEntries (the common VM case: one
 * file per VM, its address or labels changed), under the same claim discipline as above: then only
 * the ServiceEntries selecting those entries can change (registry.ts checks the rest: no conflict
 * or cross-resource warning anywhere, no outside entry of the same name).
 */
export function planWorkloadEntries(
  steps: readonly FileStep[],
  index: FileIndex,
): WorkloadEntryEdit | undefined {
  const edited = new Set(steps.map((s) => s.path));
  for (const path of index.pendingPaths()) if (!edited.has(path)) return undefined;
  const removed: WorkloadEntryResource[] = [];
  const added: WorkloadEntryResource[] = [];
  const claimedAfter = new Set<string>();
  for (const { path, before, after } of steps) {
    if (before === after) continue;
    if (before) {
      const entries = onlyWorkloadEntries(before);
      if (!entries) return undefined;
      for (const key of claimsOf(before).keys()) {
        const holders = index.claimantsOf(key);
        if (holders.size !== 1 || !holders.has(path)) return undefined;
      }
      removed.push(...entries);
    }
    if (after) {
      const entries = onlyWorkloadEntries(after);
      if (!entries) return undefined;
      for (const key of claimsOf(after).keys()) {
        for (const holder of index.claimantsOf(key)) if (holder !== path) return undefined;
        if (claimedAfter.has(key)) return undefined;
        claimedAfter.add(key);
      }
      added.push(...entries);
    }
  }
  return { removed, added };
}

/** The file's WorkloadEntries, if it defines nothing else and no two of one name. */
function onlyWorkloadEntries(load: FileLoad): readonly WorkloadEntryResource[] | undefined {
  const entries: WorkloadEntryResource[] = [];
  for (const r of load.resources) {
    if (r.kind !== 'WorkloadEntry') return undefined;
    entries.push(r);
  }
  if (claimsOf(load).size !== entries.length) return undefined;
  return entries;
}
