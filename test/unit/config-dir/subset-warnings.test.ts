// The unknown-subset warnings kept from edit to edit (config-dir/subset-warnings.ts): for random
// sequences of edits of VirtualService and DestinationRule files, the lists spliced as the records
// splice them (mesh-lists.ts), now and then replaced by lists put together whole (a full merge),
// the kept warnings are those checked whole, in the same order.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { FileLoad } from '../../../config-dir/load-file.js';
import { comparePaths } from '../../../config-dir/merge.js';
import { MeshLists } from '../../../config-dir/mesh-lists.js';
import { SubsetWarnings } from '../../../config-dir/subset-warnings.js';
import { unknownSubsetWarnings } from '../../../config-dir/validate/unknown-subsets.js';
import { meshConfigLists } from '../../../mesh/config-kinds.js';
import { resolveHost } from '../../../mesh/hosts.js';
import type { AnyConfigResource } from '../../../mesh/types.js';
import { configResource } from '../../support/mesh-fixtures.js';

const HOSTS = ['a', 'b', 'a.default.svc.cluster.local', 'c.example.internal'];
const NAMESPACES = ['default', 'shop'];
const SUBSETS = ['v1', 'v2', 'v3'];
const PATHS = ['a.yaml', 'b.yaml', 'b/c.yaml', 'd.yaml', 'e.yaml'];

const destinationArb = fc.record({
  host: fc.constantFrom(...HOSTS),
  subset: fc.option(fc.constantFrom(...SUBSETS), { nil: undefined }),
});

const resourceArb = fc.oneof(
  fc
    .record({
      ns: fc.constantFrom(...NAMESPACES),
      http: fc.array(
        fc.record({ route: fc.array(destinationArb, { maxLength: 2 }), mirror: fc.option(destinationArb) }),
        {
          maxLength: 2,
        },
      ),
      tcp: fc.array(destinationArb, { maxLength: 1 }),
    })
    .map(({ ns, http, tcp }) => ({
      kind: 'VirtualService' as const,
      ns,
      spec: {
        hosts: ['x'],
        http: http.map(({ route, mirror }) => ({
          route: route.map((destination) => ({ destination })),
          ...(mirror && { mirror }),
        })),
        ...(tcp.length > 0 && { tcp: [{ route: tcp.map((destination) => ({ destination })) }] }),
      },
    })),
  fc
    .record({
      ns: fc.constantFrom(...NAMESPACES),
      host: fc.constantFrom(...HOSTS),
      subsets: fc.array(fc.constantFrom(...SUBSETS), { maxLength: 2 }),
    })
    .map(({ ns, host, subsets }) => ({
      kind: 'DestinationRule' as const,
      ns,
      spec: { host, subsets: subsets.map((name) => ({ name, labels: { v: name } })) },
    })),
);

const editArb = fc.record({
  path: fc.constantFrom(...PATHS),
  resources: fc.array(resourceArb, { maxLength: 3 }),
  /** Read the warnings after this edit; `whole`: from lists put together whole (a full merge). */
  read: fc.boolean(),
  whole: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
});

let made = 0;
function fileLoad(path: string, resources: readonly { kind: string; ns: string; spec: object }[]): FileLoad {
  const out = resources.map(
    ({ kind, ns, spec }, i) =>
      ({
        ...configResource(kind as 'VirtualService', `r${made++}`, spec, ns, path),
        line: i + 1,
      }) as AnyConfigResource,
  );
  return { path, errors: [], warnings: [], resources: out, hostPosition: () => undefined };
}

test('unknown-subset warnings kept edit after edit are those checked whole', () => {
  fc.assert(
    fc.property(fc.array(editArb, { minLength: 1, maxLength: 50 }), (edits) => {
      const files = new Map<string, FileLoad>();
      const lists = new MeshLists();
      const kept = new SubsetWarnings(resolveHost);
      for (const { path, resources, read, whole } of edits) {
        lists.changing(path, files.get(path));
        if (resources.length > 0) files.set(path, fileLoad(path, resources));
        else files.delete(path);
        if (!read) continue;
        const traffic = whole
          ? meshConfigLists(
              [...files.keys()].sort(comparePaths).flatMap((p) => files.get(p)?.resources ?? []),
            )
          : lists.current((p) => files.get(p), files.keys());
        assert.deepEqual(
          kept.warnings(traffic.virtualServices, traffic.destinationRules),
          unknownSubsetWarnings(traffic.virtualServices, traffic.destinationRules, resolveHost),
        );
      }
    }),
    { numRuns: 300 },
  );
});
