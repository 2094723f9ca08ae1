// The change keys of a config step (mesh/config-change.ts): what each kind's edit names, where the
// answer is everything (a wildcard host, a reordering, faults flipping), files moved and resources
// renamed; and, for random edits of a config of files, that the keys cover every host whose rules
// differ, checked against a brute-force comparison of the two configs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { FileLoad } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import {
  configChangeKeys,
  meshConfigStep,
  sameResource,
  type ConfigChangeKeys,
} from '../../../mesh/config-change.js';
import { MESH_KIND_LISTS, type MeshKindList } from '../../../mesh/config-kinds.js';
import { configHasFaults } from '../../../mesh/faults.js';
import { hostMatches, resolveHost } from '../../../mesh/hosts.js';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import { resourceKey, type AnyConfigResource, type ConfigKind } from '../../../mesh/types.js';
import { resolvedHosts } from '../../../mesh/virtual-service-index.js';

type Files = Record<string, readonly AnyConfigResource[]>;

function resource(kind: ConfigKind, name: string, spec: unknown, namespace = 'default'): AnyConfigResource {
  const apiVersion = ['PeerAuthentication', 'AuthorizationPolicy', 'RequestAuthentication'].includes(kind)
    ? 'security.istio.io/v1'
    : 'networking.istio.io/v1';
  // The key function reads kind, identity, labels, annotations and spec; the spec's shape is the kind's.
  return {
    kind,
    apiVersion,
    name,
    namespace,
    labels: {},
    annotations: {},
    spec,
    file: '',
    line: 1,
  } as AnyConfigResource;
}

const vs = (
  name: string,
  hosts: string[],
  http: unknown[] = [{ route: [{ destination: { host: hosts[0] } }] }],
  ns = 'default',
) => resource('VirtualService', name, { hosts, http }, ns);
const dr = (name: string, host: string, lb = 'ROUND_ROBIN', ns = 'default') =>
  resource('DestinationRule', name, { host, trafficPolicy: { loadBalancer: { simple: lb } } }, ns);
const FAULT = {
  route: [{ destination: { host: 'a.example.internal' } }],
  fault: { abort: { httpStatus: 503, percentage: { value: 1 } } },
};

function fileLoad(path: string, resources: readonly AnyConfigResource[]): FileLoad {
  return {
    path,
    errors: [],
    warnings: [],
    resources: resources.map((r, i) => ({ ...r, file: path, line: i + 1 })),
    hostPosition: () => undefined,
  };
}

/** The config step from `before` to `after` (files: path → resources), as the registry measures it. */
function step(
  before: Files,
  after: Files,
  from: MeshConfig = configOf(before),
): { keys: ConfigChangeKeys; next: MeshConfig } {
  const merged = mergeFiles(Object.entries(after).map(([p, r]) => fileLoad(p, r)));
  const touched = new Set<string>();
  for (const path of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const a = before[path] ?? [];
    const b = after[path] ?? [];
    if (a === b) continue; // the file was not edited
    for (const r of [...a, ...b]) touched.add(resourceKey(r));
  }
  const { config, keys } = meshConfigStep(from, merged, touched);
  return { keys, next: config };
}

function configOf(files: Files): MeshConfig {
  return meshConfigStep(EMPTY_MESH_CONFIG, mergeFiles(Object.entries(files).map(([p, r]) => fileLoad(p, r))))
    .config;
}

function shape(keys: ConfigChangeKeys): [string[], string[], boolean] {
  return [[...keys.rules].sort(), [...keys.kinds].sort(), keys.everything];
}

test('a VirtualService edit names its hosts, resolved, and its kind', () => {
  const before = { 'a.yaml': [vs('r', ['reviews', 'b.example.internal'])] };
  const after = { 'a.yaml': [vs('r', ['reviews', 'c.example.internal'])] };
  assert.deepEqual(shape(step(before, after).keys), [
    ['b.example.internal', 'c.example.internal', 'reviews.default.svc.cluster.local'],
    ['virtualServices'],
    false,
  ]);
});

test('a DestinationRule added, changed, removed: its host and kind each time; unchanged: nothing, the generation stays', () => {
  const one = { 'dr.yaml': [dr('d', 'ratings', 'ROUND_ROBIN', 'shop')] };
  assert.deepEqual(shape(step({}, one).keys), [
    ['ratings.shop.svc.cluster.local'],
    ['destinationRules'],
    false,
  ]);
  const changed = { 'dr.yaml': [dr('d', 'ratings', 'RANDOM', 'shop')] };
  assert.deepEqual(shape(step(one, changed).keys), [
    ['ratings.shop.svc.cluster.local'],
    ['destinationRules'],
    false,
  ]);
  assert.deepEqual(shape(step(one, {}).keys), [
    ['ratings.shop.svc.cluster.local'],
    ['destinationRules'],
    false,
  ]);
  // Rewritten with the same content (another line, say): no key, and the generation does not move.
  const from = configOf(one);
  const same = step(one, { 'dr.yaml': [dr('d', 'ratings', 'ROUND_ROBIN', 'shop')] }, from);
  assert.deepEqual(shape(same.keys), [[], [], false]);
  assert.equal(same.next.generation, from.generation);
  assert.notEqual(step(one, changed, from).next.generation, from.generation);
});

test('each kind read wholesale names its kind alone', () => {
  const specs: Record<string, [ConfigKind, unknown, unknown]> = {
    gateways: [
      'Gateway',
      { servers: [{ port: { number: 80 }, hosts: ['*'] }] },
      { servers: [{ port: { number: 81 }, hosts: ['*'] }] },
    ],
    sidecars: ['Sidecar', { egress: [{ hosts: ['./*'] }] }, { egress: [{ hosts: ['*/*'] }] }],
    peerAuthentications: [
      'PeerAuthentication',
      { mtls: { mode: 'STRICT' } },
      { mtls: { mode: 'PERMISSIVE' } },
    ],
    authorizationPolicies: ['AuthorizationPolicy', { action: 'DENY' }, { action: 'ALLOW' }],
    requestAuthentications: [
      'RequestAuthentication',
      { jwtRules: [{ issuer: 'a' }] },
      { jwtRules: [{ issuer: 'b' }] },
    ],
    workloadGroups: [
      'WorkloadGroup',
      { template: { ports: { grpc: 1 } } },
      { template: { ports: { grpc: 2 } } },
    ],
  };
  assert.deepEqual(
    Object.keys(specs).sort(),
    MESH_KIND_LISTS.filter((l) => l !== 'virtualServices' && l !== 'destinationRules').sort(),
  );
  for (const [list, [kind, a, b]] of Object.entries(specs)) {
    const before = { 'x.yaml': [resource(kind, 'one', a)] };
    assert.deepEqual(
      shape(step(before, { 'x.yaml': [resource(kind, 'one', b)] }).keys),
      [[], [list], false],
      list,
    );
    assert.deepEqual(shape(step({}, before).keys), [[], [list], false], `${list} added`);
  }
});

test('a changed rule with a wildcard host is everything; an unchanged one beside an edit is not', () => {
  const wild = (host: string) => ({ 'a.yaml': [vs('w', [host])] });
  const other = (lb: string) => [dr('d', 'a.example.internal', lb)];
  assert.equal(
    step(wild('*.example.internal'), { 'a.yaml': [vs('w', ['*.example.internal'], [])] }).keys.everything,
    true,
  );
  assert.equal(step({}, wild('*')).keys.everything, true);
  assert.equal(step({}, { 'd.yaml': [dr('d', '*.example.internal')] }).keys.everything, true);
  const before = { ...wild('*'), 'b.yaml': other('RANDOM') };
  assert.deepEqual(shape(step(before, { ...wild('*'), 'b.yaml': other('LEAST_CONN') }).keys), [
    ['a.example.internal'],
    ['destinationRules'],
    false,
  ]);
});

test('rules kept that change their relative order are everything; a kind read wholesale reordered names its kind', () => {
  const x = vs('x', ['a.example.internal']);
  const y = vs('y', ['a.example.internal'], []);
  assert.equal(step({ 'a.yaml': [x, y] }, { 'a.yaml': [y, x] }).keys.everything, true);
  const d1 = dr('d1', 'a.example.internal');
  const d2 = dr('d2', 'b.example.internal');
  assert.equal(step({ 'a.yaml': [d1, d2] }, { 'a.yaml': [d2, d1] }).keys.everything, true);
  const s1 = resource('Sidecar', 's1', {});
  const s2 = resource('Sidecar', 's2', {}, 'shop');
  assert.deepEqual(shape(step({ 'a.yaml': [s1, s2] }, { 'a.yaml': [s2, s1] }).keys), [
    [],
    ['sidecars'],
    false,
  ]);
  // An add or a removal in between moves places, not the order of the rest.
  const z = vs('z', ['z.example.internal']);
  assert.deepEqual(shape(step({ 'a.yaml': [x, y] }, { 'a.yaml': [x, z, y] }).keys), [
    ['z.example.internal'],
    ['virtualServices'],
    false,
  ]);
  assert.deepEqual(shape(step({ 'a.yaml': [x, z, y] }, { 'a.yaml': [x, y] }).keys), [
    ['z.example.internal'],
    ['virtualServices'],
    false,
  ]);
});

test('faults flipping is everything: the first route with faults, and the last one going', () => {
  const plain = { 'a.yaml': [vs('r', ['a.example.internal'])] };
  const faulty = { 'a.yaml': [vs('r', ['a.example.internal'], [FAULT])] };
  assert.equal(configHasFaults(configOf(faulty)), true);
  assert.equal(step(plain, faulty).keys.everything, true);
  assert.equal(step(faulty, plain).keys.everything, true);
  // Faults elsewhere still: the answer stays, the edit names its host.
  const more = { ...faulty, 'b.yaml': [vs('s', ['b.example.internal'], [FAULT])] };
  assert.deepEqual(shape(step(more, { ...faulty, 'b.yaml': [vs('s', ['b.example.internal'])] }).keys), [
    ['b.example.internal'],
    ['virtualServices'],
    false,
  ]);
});

test('a file moved keeps its rules: nothing, unless it passes another rule in config order', () => {
  const x = vs('x', ['a.example.internal']);
  const y = vs('y', ['a.example.internal'], []);
  // b.yaml → a0.yaml: still before c.yaml's rule.
  assert.deepEqual(shape(step({ 'b.yaml': [x], 'c.yaml': [y] }, { 'a0.yaml': [x], 'c.yaml': [y] }).keys), [
    [],
    [],
    false,
  ]);
  // b.yaml → d.yaml: now after it.
  assert.equal(
    step({ 'b.yaml': [x], 'c.yaml': [y] }, { 'd.yaml': [x], 'c.yaml': [y] }).keys.everything,
    true,
  );
  // A resource moved from one file to another edited file, same content and place: nothing.
  const before = { 'a.yaml': [x, dr('d', 'q.example.internal')], 'b.yaml': [] };
  const after = { 'a.yaml': [x], 'b.yaml': [dr('d', 'q.example.internal')] };
  assert.deepEqual(shape(step(before, after).keys), [[], [], false]);
});

test('a resource renamed: the old name goes and the new one comes, both named by host', () => {
  const before = { 'a.yaml': [dr('old', 'a.example.internal')] };
  const after = { 'a.yaml': [dr('new', 'b.example.internal')] };
  assert.deepEqual(shape(step(before, after).keys), [
    ['a.example.internal', 'b.example.internal'],
    ['destinationRules'],
    false,
  ]);
});

test('two resources of one key in a config (made by hand) cannot be paired: everything', () => {
  const twice: MeshConfig = {
    ...EMPTY_MESH_CONFIG,
    virtualServices: [vs('x', ['a']), vs('x', ['b'])],
  } as MeshConfig;
  assert.equal(configChangeKeys(twice, { ...twice }, ['VirtualService/default/x']).everything, true);
});

// ---- the property ----------------------------------------------------------------------------

const HOSTS = [
  'reviews',
  'ratings.shop.svc.cluster.local',
  'a.example.internal',
  'b.example.internal',
  'c.example.internal',
];
const WILD = ['*.example.internal', '*'];
const hostArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...HOSTS) },
  { weight: 1, arbitrary: fc.constantFrom(...WILD) },
);
const nsArb = fc.constantFrom('default', 'shop');
const nameArb = fc.constantFrom('n1', 'n2', 'n3');

const resourceArb: fc.Arbitrary<AnyConfigResource> = fc.oneof(
  fc
    .tuple(
      nameArb,
      fc.array(hostArb, { minLength: 1, maxLength: 2 }),
      fc.boolean(),
      fc.integer({ min: 0, max: 2 }),
      nsArb,
    )
    .map(([name, hosts, fault, v, ns]) =>
      vs(
        name,
        hosts,
        [fault ? FAULT : { route: [{ destination: { host: hosts[0] } }], timeout: `${v}s` }],
        ns,
      ),
    ),
  fc
    .tuple(nameArb, hostArb, fc.constantFrom('ROUND_ROBIN', 'RANDOM'), nsArb)
    .map(([name, host, lb, ns]) => dr(name, host, lb, ns)),
  fc
    .tuple(
      fc.constantFrom<ConfigKind>('Sidecar', 'Gateway', 'AuthorizationPolicy', 'WorkloadGroup'),
      nameArb,
      fc.integer({ min: 0, max: 1 }),
      nsArb,
    )
    .map(([kind, name, v, ns]) => resource(kind, name, { v }, ns)),
);

const PATHS = ['a.yaml', 'b.yaml', 'c.yaml', 'd.yaml'];
const filesArb: fc.Arbitrary<Files> = fc
  .array(fc.tuple(fc.constantFrom(...PATHS), fc.array(resourceArb, { maxLength: 4 })), { maxLength: 4 })
  .map((entries) => Object.fromEntries(entries));

/** An edit of one or two files: each rewritten with a random subset, reordering, and new resources; or renamed. */
const editArb = (files: Files): fc.Arbitrary<Files> =>
  fc
    .tuple(
      fc.subarray(PATHS, { minLength: 1, maxLength: 2 }),
      fc.array(fc.tuple(fc.boolean(), fc.nat(), fc.option(resourceArb, { nil: undefined })), {
        maxLength: 4,
      }),
      fc.boolean(),
    )
    .map(([paths, ops, rename]) => {
      const out: Record<string, readonly AnyConfigResource[]> = { ...files };
      const [first, second] = paths;
      if (rename && first && second && out[first]) {
        out[second] = [...(out[second] ?? []), ...(out[first] ?? [])];
        delete out[first];
        return out;
      }
      for (const path of paths) {
        const list = [...(out[path] ?? [])];
        for (const [drop, at, add] of ops) {
          if (drop && list.length > 0) {
            const [moved] = list.splice(at % list.length, 1);
            if (moved && add === undefined) list.splice(at % (list.length + 1), 0, moved); // a move within the file
          } else if (add) list.splice(at % (list.length + 1), 0, add);
        }
        out[path] = list;
      }
      return out;
    });

/** The VirtualServices and DestinationRules that apply to `host`, in config order (brute force). */
function rulesFor(config: MeshConfig, host: string): AnyConfigResource[] {
  return [
    ...config.virtualServices.filter((r) => resolvedHosts(r).some((p) => hostMatches(p, host))),
    ...config.destinationRules.filter((r) => hostMatches(resolveHost(r.spec.host, r.namespace), host)),
  ];
}

function sameList(a: readonly AnyConfigResource[], b: readonly AnyConfigResource[]): boolean {
  return a.length === b.length && a.every((r, i) => sameResource(r, b[i] as AnyConfigResource));
}

test('for random edits of a config, the keys cover every host whose rules differ, and name nothing when nothing does', () => {
  fc.assert(
    fc.property(
      filesArb.chain((files) => editArb(files).map((edited) => [files, edited] as const)),
      ([before, after]) => {
        const prev = configOf(before);
        const { keys, next } = step(before, after, prev);
        const differs = (list: MeshKindList) => !sameList(prev[list] ?? [], next[list] ?? []);
        if (!MESH_KIND_LISTS.some(differs)) {
          assert.deepEqual(shape(keys), [[], [], false], 'nothing differs: no key');
          assert.equal(next.generation, prev.generation);
          return;
        }
        assert.equal(next.generation, prev.generation + 1);
        if (configHasFaults(prev) !== configHasFaults(next))
          assert.equal(keys.everything, true, 'faults flipped');
        if (keys.everything) return;
        for (const list of MESH_KIND_LISTS)
          if (differs(list)) assert.ok(keys.kinds.has(list), `kind ${list}`);
        for (const host of HOSTS.map((h) => resolveHost(h, 'default')).concat(
          HOSTS.map((h) => resolveHost(h, 'shop')),
        )) {
          if (!sameList(rulesFor(prev, host), rulesFor(next, host)))
            assert.ok(keys.rules.has(host), `host ${host}`);
        }
      },
    ),
    { numRuns: 400 },
  );
});
