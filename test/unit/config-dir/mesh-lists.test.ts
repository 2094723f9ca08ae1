// The traffic config lists kept from edit to edit (config-dir/mesh-lists.ts): for random sequences
// of file edits, read back after one edit or several, the spliced lists are the lists put together
// whole from the files in force (path order, then document order), and a kind no edited file
// defines keeps its very list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { FileLoad } from '../../../config-dir/load-file.js';
import { comparePaths } from '../../../config-dir/merge.js';
import { MeshLists } from '../../../config-dir/mesh-lists.js';
import {
  MESH_CONFIG_KINDS,
  MESH_KIND_LISTS,
  meshConfigLists,
  meshListOf,
} from '../../../mesh/config-kinds.js';
import type { AnyConfigResource, ConfigKind } from '../../../mesh/types.js';
import { configResource } from '../../support/mesh-fixtures.js';

const KINDS: readonly ConfigKind[] = ['VirtualService', 'DestinationRule', 'Sidecar', 'ServiceEntry'];
const PATHS = ['a.yaml', 'b/c.yaml', 'b.yaml', 'd.yaml', 'e.yaml', 'e/f.yaml', 'g.yaml'];

const editArb = fc.record({
  path: fc.constantFrom(...PATHS),
  kinds: fc.array(fc.constantFrom(...KINDS), { maxLength: 4 }),
  /** Read the lists back after this edit (else the next edits pile up). */
  read: fc.boolean(),
});

let made = 0;
function fileLoad(path: string, kinds: readonly ConfigKind[]): FileLoad {
  const resources = kinds.map(
    (kind, i) =>
      ({ ...configResource(kind, `r${made++}`, {}, 'default', path), line: i + 1 }) as AnyConfigResource,
  );
  return { path, errors: [], warnings: [], resources, hostPosition: () => undefined };
}

test('traffic config lists spliced edit after edit are the lists put together whole', () => {
  fc.assert(
    fc.property(fc.array(editArb, { minLength: 1, maxLength: 60 }), (edits) => {
      const files = new Map<string, FileLoad>();
      const lists = new MeshLists();
      const meshFiles = (): string[] =>
        [...files].filter(([, f]) => f.resources.some((r) => MESH_CONFIG_KINDS.has(r.kind))).map(([p]) => p);
      let previous: ReturnType<MeshLists['current']> | undefined;
      /** What `previous` held when it was read: a later read must leave it so. */
      let held: AnyConfigResource[][] = [];
      let editedKinds = new Set<string>();
      for (const { path, kinds, read } of edits) {
        const before = files.get(path);
        lists.changing(path, before);
        const after = kinds.length > 0 ? fileLoad(path, kinds) : undefined;
        if (after) files.set(path, after);
        else files.delete(path);
        for (const r of [...(before?.resources ?? []), ...(after?.resources ?? [])]) {
          const list = meshListOf(r.kind);
          if (list) editedKinds.add(list);
        }
        if (!read) continue;
        const got = lists.current((p) => files.get(p), meshFiles());
        const paths = [...files.keys()].sort(comparePaths);
        const whole = meshConfigLists(paths.flatMap((p) => files.get(p)?.resources ?? []));
        if (previous) {
          const was = previous;
          assert.deepEqual(
            MESH_KIND_LISTS.map((l) => [...was[l]]),
            held,
            'earlier lists unchanged',
          );
        }
        for (const list of MESH_KIND_LISTS) {
          assert.deepEqual(got[list], whole[list], list);
          if (previous && !editedKinds.has(list)) assert.equal(got[list], previous[list], `${list} kept`);
        }
        previous = got;
        held = MESH_KIND_LISTS.map((l) => [...got[l]]);
        editedKinds = new Set();
      }
    }),
    { numRuns: 300 },
  );
});
