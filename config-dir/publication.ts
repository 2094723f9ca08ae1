// What a file step publishes, planned before anything is taken: an edit host by host where only
// the edited files' own hosts can change (incremental.ts), a traffic config edit that leaves the
// services as they are, a WorkloadEntry edit that converts again only the ServiceEntries selecting
// what changed; or, when none of those applies, every file merged again. A plan that applies
// returns the function that builds its publication once the edited files' candidates are taken
// (registry.ts: one accept, one publish for all).
import type { RegistrySnapshot } from '../model/change.js';
import type { Endpoint } from '../model/endpoint.js';
import { LayeredMap } from '../model/layered-map.js';
import type { Service } from '../model/service.js';
import type { MeshConfigLists } from '../mesh/config-kinds.js';
import { resolveHost } from '../mesh/hosts.js';
import { resourceKey, type WorkloadEntryResource } from '../mesh/types.js';
import { buildSnapshot, type CrossResourceWarning } from './conversion.js';
import type { FileRecords } from './file-records.js';
import { isMeshConfigEdit, planIncremental, planWorkloadEntries, type FileStep } from './incremental.js';
import { EMPTY_MERGED, type ConfigConflict, type MergedConfig } from './merge.js';
import { SelectionIndex } from './selection-index.js';
import { SubsetWarnings } from './subset-warnings.js';
import { unknownSubsetWarnings } from './validate/unknown-subsets.js';

export interface Publication {
  readonly snapshot: RegistrySnapshot;
  /** The only hostnames that can differ from the snapshot in force, when the plan knows. */
  readonly hosts?: Iterable<string>;
  /** The services' lists of the merged config are now behind the files (mergedConfig() merges again). */
  readonly servicesBehind?: boolean;
  /** The traffic config after the step; absent: as it was. */
  readonly traffic?: MeshConfigLists;
  /** The warnings across resources after the step; absent: as they were. */
  readonly warnings?: readonly CrossResourceWarning[];
  /** Every file merged again: the merged config, and what its conversion found. */
  readonly full?: FullMerge;
}

export interface FullMerge {
  readonly merged: MergedConfig;
  /** Clashes between files' claims (the records' settle()). */
  readonly claimConflicts: readonly ConfigConflict[];
  /** Those and the merge's and the conversion's conflicts. */
  readonly conflicts: readonly ConfigConflict[];
  /** The part of the warnings from the services' conversion. */
  readonly conversionWarnings: readonly CrossResourceWarning[];
  /** Who selects which WorkloadEntry; undefined with a conflict or a cross-resource warning. */
  readonly selection: SelectionIndex | undefined;
}

/** What the publishes so far leave in force besides the snapshot and the mesh config. */
export interface Published extends FullMerge {
  /** `merged`'s ServiceEntries and WorkloadEntries are behind the files (an edit host by host). */
  readonly mergedStale: boolean;
  /** The warnings across resources: the conversion's and the traffic config's. */
  readonly crossWarnings: readonly CrossResourceWarning[];
}

export const NOTHING_PUBLISHED: Published = {
  merged: EMPTY_MERGED,
  claimConflicts: [],
  conflicts: [],
  conversionWarnings: [],
  selection: undefined,
  mergedStale: false,
  crossWarnings: [],
};

/** What is in force after `publication`. */
export function afterPublication(last: Published, publication: Publication): Published {
  const { full, traffic, warnings } = publication;
  const base: Published = full
    ? { ...full, mergedStale: false, crossWarnings: last.crossWarnings }
    : {
        ...last,
        // The services' lists stay as they are (stale or not: the registry's mergedConfig() knows).
        ...(traffic && { merged: { ...last.merged, ...traffic } }),
        mergedStale: last.mergedStale || publication.servicesBehind === true,
      };
  return warnings ? { ...base, crossWarnings: warnings } : base;
}

/** What the plans read: what is published, and the snapshot in force. */
export type InForce = Published & { readonly snapshot: RegistrySnapshot };

/**
 * The plan of an edit that needs no full merge, or undefined. Plans are tried cheapest first; none
 * changes anything until its builder runs.
 */
export function planEdit(
  steps: readonly FileStep[],
  records: FileRecords,
  published: InForce,
): (() => Publication) | undefined {
  return (
    planTrafficEdit(steps, records, published) ??
    planServiceEdit(steps, records, published) ??
    planWorkloadEdit(steps, records, published)
  );
}

/**
 * Files that define only traffic config (isMeshConfigEdit): the services stay as published, and
 * only the traffic config is put together again: the edited files spliced into the lists
 * (mesh-lists.ts), their unknown-subset warnings checked again (subset-warnings.ts), so a
 * DestinationRule edit costs what it touched, not what the traffic config holds.
 */
function planTrafficEdit(
  steps: readonly FileStep[],
  records: FileRecords,
  published: InForce,
): (() => Publication) | undefined {
  if (published.conflicts.length > 0 || !isMeshConfigEdit(steps, records.index)) return undefined;
  return () => {
    const traffic = records.meshLists();
    const warnings = [
      ...published.conversionWarnings,
      ...subsetWarnings(records).warnings(traffic.virtualServices, traffic.destinationRules),
    ];
    // No service changed; a file now broken or mended still counts.
    return { snapshot: published.snapshot, hosts: [], traffic, warnings };
  };
}

/** Per directory's records, its unknown-subset warnings kept from traffic edit to traffic edit. */
const SUBSET_WARNINGS = new WeakMap<FileRecords, SubsetWarnings>();

function subsetWarnings(records: FileRecords): SubsetWarnings {
  let warnings = SUBSET_WARNINGS.get(records);
  if (!warnings) SUBSET_WARNINGS.set(records, (warnings = new SubsetWarnings(resolveHost)));
  return warnings;
}

/** Files of ServiceEntries with their own endpoints: applied host by host (incremental.ts). */
function planServiceEdit(
  steps: readonly FileStep[],
  records: FileRecords,
  published: InForce,
): (() => Publication) | undefined {
  const edit = planIncremental(steps, records.index);
  if (!edit) return undefined;
  return () => {
    const { snapshot } = buildSnapshot(edit.serviceEntries, []);
    const hosts = [...edit.hosts];
    return {
      snapshot: layered(published.snapshot, hosts, (h) => [
        snapshot.services.get(h),
        snapshot.services.has(h) ? (snapshot.endpoints.get(h) ?? []) : undefined,
      ]),
      hosts,
      servicesBehind: true,
    };
  };
}

/** Files of WorkloadEntries: only the ServiceEntries selecting an entry they changed are converted again. */
function planWorkloadEdit(
  steps: readonly FileStep[],
  records: FileRecords,
  published: InForce,
): (() => Publication) | undefined {
  const plan = planWorkloadEntries(steps, records.index);
  const change = plan && published.selection?.change(plan);
  if (!change) return undefined;
  const conversion = buildSnapshot(change.serviceEntries, change.workloadEntries);
  // A new cross-resource warning is the full merge's to record and log.
  if (conversion.warnings.length > 0 || conversion.conflicts.length > 0) return undefined;
  return () => {
    change.commit();
    const hosts = [...conversion.snapshot.services.keys()];
    return {
      snapshot: layered(published.snapshot, hosts, (h) => [
        conversion.snapshot.services.get(h),
        conversion.snapshot.endpoints.get(h) ?? [],
      ]),
      hosts,
      servicesBehind: true,
    };
  };
}

/**
 * Every file merged again (`merged`), converted with the WorkloadEntries from outside the
 * directory; `claimConflicts`: the clashes the records' settle() found.
 */
export function fullMerge(
  merged: MergedConfig,
  claimConflicts: readonly ConfigConflict[],
  outside: readonly WorkloadEntryResource[],
): Publication {
  const workloadEntries = withOutsideEntries(merged.workloadEntries, outside);
  const conversion = buildSnapshot(merged.serviceEntries, workloadEntries);
  const conflicts = [...claimConflicts, ...merged.conflicts, ...conversion.conflicts];
  const selection =
    conflicts.length === 0 && conversion.warnings.length === 0
      ? new SelectionIndex(merged.serviceEntries, workloadEntries, outside.map(resourceKey))
      : undefined;
  const warnings = [
    ...conversion.warnings,
    ...unknownSubsetWarnings(merged.virtualServices, merged.destinationRules, resolveHost),
  ];
  return {
    snapshot: conversion.snapshot,
    traffic: merged,
    warnings,
    full: { merged, claimConflicts, conflicts, conversionWarnings: conversion.warnings, selection },
  };
}

/** `current` with `hosts` set to what `of` says (layered maps share the old entries: model/layered-map.ts). */
function layered(
  current: RegistrySnapshot,
  hosts: readonly string[],
  of: (host: string) => readonly [Service | undefined, readonly Endpoint[] | undefined],
): RegistrySnapshot {
  const values = hosts.map((h) => [h, of(h)] as const);
  return {
    services: LayeredMap.of(current.services).with(values.map(([h, [service]]) => [h, service])),
    endpoints: LayeredMap.of(current.endpoints).with(values.map(([h, [, endpoints]]) => [h, endpoints])),
  };
}

/** The files' WorkloadEntries and the outside ones; a file's entry of the same name wins. */
function withOutsideEntries(
  own: readonly WorkloadEntryResource[],
  outside: readonly WorkloadEntryResource[],
): readonly WorkloadEntryResource[] {
  if (outside.length === 0) return own;
  const taken = new Set(own.map(resourceKey));
  return [...own, ...outside.filter((e) => !taken.has(resourceKey(e)))];
}
