// The traffic config of the files in force (FileRecords.meshLists), kept from edit to edit: each
// kind's list is in config order (file path, then document order) and an edit splices the edited
// files' resources into the lists of the kinds they define, found by binary search on each
// resource's file. A list no edited file defines anything of is the previous list itself, so what
// is derived per list downstream (the mesh index, mesh/mesh-index.ts) is kept. Whole lists are put
// together again only at first, after many edits at once, or when a resource's file is not its
// path (then nothing can be found by file).
import {
  meshConfigLists,
  meshListOf,
  type MeshConfigLists,
  type MeshKindList,
} from '../mesh/config-kinds.js';
import type { AnyConfigResource } from '../mesh/types.js';
import type { FileLoad } from './load-file.js';
import { comparePaths } from './merge.js';

/** More files edited at once than this: the lists are put together again (a rescan, the start). */
const MAX_SPLICED_FILES = 64;

/** What one kind's list gained and lost in a step (the removed and added resources of its kind). */
export interface ListStep {
  readonly from: readonly AnyConfigResource[];
  readonly removed: readonly AnyConfigResource[];
  readonly added: readonly AnyConfigResource[];
}

/** Per list this module made by splicing, the list it was made from and what changed. */
const STEPS = new WeakMap<readonly AnyConfigResource[], ListStep>();

/** How `list` was made from an earlier list by one step of meshLists, if it was. */
export function listStep(list: readonly AnyConfigResource[]): ListStep | undefined {
  return STEPS.get(list);
}

type Lists = Record<MeshKindList, readonly AnyConfigResource[]>;

export class MeshLists {
  private lists: Lists | undefined;
  /** Every resource of `lists` names its file's path (what splice() finds a file's resources by). */
  private byFile = false;
  /** Files whose version in force changed since `lists` was made, with the version it reflects. */
  private readonly pending = new Map<string, FileLoad | undefined>();

  /** `path`'s version in force is about to change from `before` (FileRecords.setFile). */
  changing(path: string, before: FileLoad | undefined): void {
    if (!this.pending.has(path)) this.pending.set(path, before);
  }

  /**
   * The lists of the files in force. `inForce`: a file's version in force; `meshFiles`: the files
   * whose version in force defines traffic config.
   */
  current(inForce: (path: string) => FileLoad | undefined, meshFiles: Iterable<string>): MeshConfigLists {
    const canSplice = this.lists && this.byFile && this.pending.size <= MAX_SPLICED_FILES;
    let lists = canSplice ? this.splice(inForce) : undefined;
    if (!lists) {
      const paths = [...meshFiles].sort(comparePaths);
      const resources = paths.flatMap((p) => inForce(p)?.resources ?? []);
      lists = meshConfigLists(resources);
      // Checked once per whole list: a hand-made load could name another file.
      this.byFile = paths.every((p) => (inForce(p)?.resources ?? []).every((r) => r.file === p));
    }
    this.lists = lists;
    this.pending.clear();
    // Each list holds only its kind: spliced by meshListOf, the table's list of each kind.
    return lists as unknown as MeshConfigLists;
  }

  /** The lists with the pending files spliced in; undefined if one cannot be found by file. */
  private splice(inForce: (path: string) => FileLoad | undefined): Lists | undefined {
    const lists = this.lists as Lists;
    if (this.pending.size === 0) return lists;
    const next: Partial<Record<MeshKindList, AnyConfigResource[]>> = {};
    const changes = new Map<MeshKindList, { removed: AnyConfigResource[]; added: AnyConfigResource[] }>();
    for (const [path, before] of this.pending) {
      const after = inForce(path);
      if (after === before) continue;
      const old = byList(before);
      const now = byList(after);
      for (const list of new Set([...old.keys(), ...now.keys()])) {
        const out = (next[list] ??= lists[list].slice());
        const removed = old.get(list) ?? [];
        const added = now.get(list) ?? [];
        if (added.some((r) => r.file !== path)) return undefined;
        const [lo, hi] = rangeOf(out, path);
        if (hi - lo !== removed.length || removed.some((r, i) => out[lo + i] !== r)) return undefined;
        out.splice(lo, hi - lo, ...added);
        let change = changes.get(list);
        if (!change) changes.set(list, (change = { removed: [], added: [] }));
        change.removed.push(...removed);
        change.added.push(...added);
      }
    }
    const out: Lists = { ...lists, ...next };
    for (const [list, { removed, added }] of changes)
      STEPS.set(out[list], { from: lists[list], removed, added });
    return out;
  }
}

/** A version's traffic config resources by list, in document order. */
function byList(load: FileLoad | undefined): Map<MeshKindList, AnyConfigResource[]> {
  const out = new Map<MeshKindList, AnyConfigResource[]>();
  for (const r of load?.resources ?? []) {
    const list = meshListOf(r.kind);
    if (!list) continue;
    const those = out.get(list);
    if (those) those.push(r);
    else out.set(list, [r]);
  }
  return out;
}

/** Where `path`'s resources stand in a list in config order: [first, after the last). */
function rangeOf(list: readonly AnyConfigResource[], path: string): [number, number] {
  const bound = (past: (c: number) => boolean): number => {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (past(comparePaths((list[mid] as AnyConfigResource).file, path))) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  return [bound((c) => c >= 0), bound((c) => c > 0)];
}
