// The mesh config's key index kept from step to step (mesh/config-key-index.ts, config-change.ts):
// for random sequences of edits, the index derived by each step's updates answers as one built
// from scratch, and a chain of steps given the edited files' versions (the registry's way: the index
// derived, unchanged lists kept) yields, step by step, the keys, generations and lists that steps
// indexing the whole config yield.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { FileLoad } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { meshConfigStep, type ConfigChangeKeys } from '../../../mesh/config-change.js';
import { configKeyIndex, type Placed } from '../../../mesh/config-key-index.js';
import { MESH_CONFIG_KINDS, MESH_KIND_LISTS } from '../../../mesh/config-kinds.js';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import { MeshIndex } from '../../../mesh/mesh-index.js';
import { resourceKey, type AnyConfigResource, type ConfigKind } from '../../../mesh/types.js';
import { configResource } from '../../support/mesh-fixtures.js';

const KINDS: readonly ConfigKind[] = ['VirtualService', 'DestinationRule', 'Sidecar', 'AuthorizationPolicy'];
const NAMES = ['n1', 'n2', 'n3', 'n4'];
const NAMESPACES = ['default', 'shop'];
const PATHS = ['a.yaml', 'b.yaml', 'c.yaml', 'd.yaml', 'e.yaml'];

/** A resource of `kind`; `v` varies its content. */
function resource(kind: ConfigKind, name: string, namespace: string, v: number): AnyConfigResource {
  const host = `h${v % 3}.example.internal`;
  const spec =
    kind === 'VirtualService'
      ? { hosts: [host], http: [{ route: [{ destination: { host } }], timeout: `${v}s` }] }
      : kind === 'DestinationRule'
        ? { host, trafficPolicy: { loadBalancer: { simple: v % 2 ? 'RANDOM' : 'ROUND_ROBIN' } } }
        : { v };
  const apiVersion = kind === 'AuthorizationPolicy' ? 'security.istio.io/v1' : 'networking.istio.io/v1';
  return { ...configResource(kind, name, spec, namespace, ''), apiVersion } as AnyConfigResource;
}

const resourceArb: fc.Arbitrary<AnyConfigResource> = fc
  .tuple(fc.constantFrom(...KINDS), fc.constantFrom(...NAMES), fc.constantFrom(...NAMESPACES), fc.nat(5))
  .map(([kind, name, ns, v]) => resource(kind, name, ns, v));

/** One edit: a file rewritten with these resources (none: removed). */
const editArb = fc.tuple(fc.constantFrom(...PATHS), fc.array(resourceArb, { maxLength: 4 }));

/** A file's version, its resources placed in it (made once: an unedited file keeps its objects). */
function fileLoad(path: string, resources: readonly AnyConfigResource[]): FileLoad {
  return {
    path,
    errors: [],
    warnings: [],
    resources: resources.map((r, i) => ({ ...r, file: path, line: i + 1 })),
    hostPosition: () => undefined,
  };
}

/** What a config shows of its lists: each resource's key, place and content. */
function listsOf(config: MeshConfig): string[][] {
  return MESH_KIND_LISTS.map((list) =>
    (config[list] ?? []).map((r) => `${resourceKey(r)} ${r.file}:${r.line} ${JSON.stringify(r.spec)}`),
  );
}

function shape(keys: ConfigChangeKeys): [string[], string[], boolean] {
  return [[...keys.rules].sort(), [...keys.kinds].sort(), keys.everything];
}

test('a key index derived by random updates answers as one built from scratch', () => {
  // More keys than a layer holds before it is folded into a new base (model/layered-map.ts).
  const manyArb = fc
    .tuple(fc.constantFrom(...KINDS), fc.integer({ min: 0, max: 59 }), fc.constantFrom(...NAMESPACES))
    .map(([kind, n, ns]) => resource(kind, `n${n}`, ns, n));
  const updateArb = fc.array(fc.tuple(manyArb, fc.boolean()), { minLength: 4, maxLength: 12 });
  fc.assert(
    fc.property(fc.array(updateArb, { minLength: 30, maxLength: 60 }), (steps) => {
      const model = new Map<string, Placed>();
      let index = configKeyIndex(EMPTY_MESH_CONFIG);
      assert.ok(index);
      for (const updates of steps) {
        const batch = new Map<string, Placed | undefined>();
        for (const [resource, remove] of updates) {
          const key = resourceKey(resource);
          const placed = remove ? undefined : ({ resource, list: 'virtualServices' } as const);
          batch.set(key, placed);
        }
        for (const [key, placed] of batch) {
          if (placed) model.set(key, placed);
          else model.delete(key);
        }
        index = index.with(batch);
        assert.equal(index.size, model.size);
        assert.deepEqual([...index.keys()].sort(), [...model.keys()].sort());
        for (const [key, placed] of model) assert.equal(index.get(key), placed);
      }
    }),
    { numRuns: 100 },
  );
});

test('steps given the edited files’ versions agree with steps indexing the whole config, edit after edit', () => {
  fc.assert(
    fc.property(fc.array(editArb, { minLength: 10, maxLength: 40 }), (edits) => {
      const files = new Map<string, FileLoad>();
      let incremental = EMPTY_MESH_CONFIG;
      let scratch = EMPTY_MESH_CONFIG;
      for (const [path, resources] of edits) {
        const before = files.get(path);
        const after = resources.length > 0 ? fileLoad(path, resources) : undefined;
        if (after) files.set(path, after);
        else files.delete(path);
        const touched = new Set<string>();
        for (const load of [before, after])
          for (const r of load?.resources ?? []) touched.add(resourceKey(r));
        const versions = (after?.resources ?? []).filter((r) => MESH_CONFIG_KINDS.has(r.kind));
        const merged = mergeFiles(files.values());
        const derived = meshConfigStep(incremental, merged, touched, versions);
        const whole = meshConfigStep(scratch, merged, touched);
        assert.deepEqual(shape(derived.keys), shape(whole.keys));
        assert.equal(derived.config.generation, whole.config.generation);
        assert.deepEqual(listsOf(derived.config), listsOf(whole.config));
        incremental = derived.config;
        scratch = whole.config;
      }
    }),
    { numRuns: 150 },
  );
});

test('an edit of one kind keeps the other kinds’ lists, and their indexes, as they were', () => {
  const vsFile = fileLoad('vs.yaml', [resource('VirtualService', 'r', 'default', 1)]);
  const dr = (v: number) => fileLoad('dr.yaml', [resource('DestinationRule', 'd', 'default', v)]);
  const first = meshConfigStep(EMPTY_MESH_CONFIG, mergeFiles([vsFile, dr(1)])).config;
  const edit = dr(2);
  const touched = [resourceKey(edit.resources[0] as AnyConfigResource)];
  const { config, keys } = meshConfigStep(first, mergeFiles([vsFile, edit]), touched, edit.resources);
  assert.deepEqual(shape(keys), [
    ['h2.example.internal', 'h1.example.internal'].sort(),
    ['destinationRules'],
    false,
  ]);
  assert.equal(config.virtualServices, first.virtualServices, 'the VirtualServices list is the one before');
  assert.notEqual(config.destinationRules, first.destinationRules);
  const [a, b] = [new MeshIndex(first), new MeshIndex(config)];
  assert.equal(b.virtualServices, a.virtualServices, 'its index is kept');
  assert.notEqual(b.destinationRules, a.destinationRules);
  assert.equal(
    b.destinationRules.lookup('h2.example.internal', 'default')?.spec.trafficPolicy?.loadBalancer?.simple,
    'ROUND_ROBIN',
  );
});
