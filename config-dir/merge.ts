// The in-force files → one set of resources. Files are taken in path order and documents in file
// order, so "first wins" is stable and independent of the order events arrived in.
import type { FileLoad } from './load-file.js';
import { resourceKey, type AnyConfigResource } from '../mesh/types.js';
import { EMPTY_KIND_LISTS, kindLists, type KindLists } from '../mesh/config-kinds.js';

export interface ResourceRef {
  readonly resource: string;
  readonly file: string;
  readonly line: number;
}

/** Two definitions of one thing: the first is served, the other is ignored until the first goes away. */
export interface ConfigConflict {
  readonly type: 'duplicate-resource' | 'duplicate-host';
  /** The resource key or the hostname both claim. */
  readonly subject: string;
  readonly kept: ResourceRef;
  readonly ignored: ResourceRef;
}

/** Every kind's list (mesh/config-kinds.ts), and the definitions left out as duplicates. */
export interface MergedConfig extends KindLists {
  readonly conflicts: readonly ConfigConflict[];
}

export const EMPTY_MERGED: MergedConfig = Object.freeze({ ...EMPTY_KIND_LISTS, conflicts: [] });

export function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function refOf(r: AnyConfigResource): ResourceRef {
  return { resource: resourceKey(r), file: r.file, line: r.line };
}

export function mergeFiles(files: Iterable<FileLoad>): MergedConfig {
  const ordered = [...files].sort((a, b) => comparePaths(a.path, b.path));
  const byKey = new Map<string, AnyConfigResource>();
  const conflicts: ConfigConflict[] = [];
  for (const file of ordered) {
    for (const resource of file.resources) {
      const key = resourceKey(resource);
      const first = byKey.get(key);
      if (first)
        conflicts.push({
          type: 'duplicate-resource',
          subject: key,
          kept: refOf(first),
          ignored: refOf(resource),
        });
      else byKey.set(key, resource);
    }
  }
  return { ...kindLists([...byKey.values()]), conflicts };
}
