// The DestinationRule index derived from step to step (mesh/destination-rule-index.ts): for random
// sequences of file edits taken the registry's way (meshConfigStep given the edited files'
// versions), the index of each config — derived from the previous one's, or from an older one's
// when a config was skipped — answers every lookup as one built whole, and a host whose rules the
// step did not touch keeps the very merged rule it had.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { FileLoad } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { meshConfigStep } from '../../../mesh/config-change.js';
import { DestinationRuleIndex, destinationRuleIndex } from '../../../mesh/destination-rule-index.js';
import { mergeDestinationRules } from '../../../mesh/destination-rule-merge.js';
import { resolveHost } from '../../../mesh/hosts.js';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import { MeshIndex } from '../../../mesh/mesh-index.js';
import type { DestinationRuleResource, DestinationRuleSpec } from '../../../mesh/types.js';
import { resourceKey, type AnyConfigResource } from '../../../mesh/types.js';
import { destinationRule } from '../../support/mesh-fixtures.js';

const NAMESPACES = ['default', 'shop', 'istio-system'];
/** Short names resolve per namespace; one wildcard, rarely. */
const HOSTS = ['a', 'b', 'a.default.svc.cluster.local', 'c.example.internal', '*.example.internal'];
const PATHS = ['a.yaml', 'b.yaml', 'c.yaml', 'd.yaml', 'e.yaml', 'f.yaml'];
const LOOKUP_HOSTS = [
  'a.default.svc.cluster.local',
  'a.shop.svc.cluster.local',
  'b.default.svc.cluster.local',
  'b.shop.svc.cluster.local',
  'b.istio-system.svc.cluster.local',
  'c.example.internal',
  'd.example.internal',
];

const specArb: fc.Arbitrary<DestinationRuleSpec> = fc
  .record({
    host: fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom(...HOSTS.slice(0, 4)) },
      { weight: 1, arbitrary: fc.constant(HOSTS[4] as string) },
    ),
    subsets: fc.array(fc.constantFrom('v1', 'v2', 'v3'), { maxLength: 2 }),
    policy: fc.option(fc.constantFrom('RANDOM' as const, 'ROUND_ROBIN' as const)),
    exportTo: fc.option(fc.constantFrom(['.'], ['*'], ['shop'])),
    selector: fc.boolean(),
    v: fc.nat(3),
  })
  .map(({ host, subsets, policy, exportTo, selector, v }) => ({
    host,
    subsets: subsets.map((name) => ({ name, labels: { version: `${name}-${v}` } })),
    ...(policy && { trafficPolicy: { loadBalancer: { simple: policy } } }),
    ...(exportTo && { exportTo }),
    ...(selector && { workloadSelector: { matchLabels: { app: 'x' } } }),
  }));

const ruleArb = fc.tuple(fc.nat(5), fc.constantFrom(...NAMESPACES), specArb);

/** One edit: a file rewritten with these rules (none: removed); `look`: the index is made after it. */
const editArb = fc.record({
  path: fc.constantFrom(...PATHS),
  rules: fc.array(ruleArb, { maxLength: 3 }),
  look: fc.boolean(),
});

function fileLoad(path: string, rules: readonly [number, string, DestinationRuleSpec][]): FileLoad {
  // One name per file and number: two files never define one key (no conflicts to settle).
  const resources = rules.map(([n, ns, spec], i) => ({
    ...destinationRule(`${path.replace('.yaml', '')}-${n}-${i}`, spec, ns),
    file: path,
    line: i + 1,
  }));
  return { path, errors: [], warnings: [], resources, hostPosition: () => undefined };
}

/** Every lookup a build could make, answered. */
function answers(index: DestinationRuleIndex): (DestinationRuleResource | undefined)[] {
  const out: (DestinationRuleResource | undefined)[] = [];
  for (const host of LOOKUP_HOSTS)
    for (const proxy of NAMESPACES)
      for (const service of [undefined, ...NAMESPACES]) out.push(index.lookup(host, proxy, service));
  return out;
}

/** The hosts a step's rules name, resolved (what a lookup of another host cannot see changed). */
function hostsOf(loads: readonly (FileLoad | undefined)[]): Set<string> {
  const out = new Set<string>();
  for (const load of loads)
    for (const r of load?.resources ?? []) {
      const dr = r as DestinationRuleResource;
      out.add(resolveHost(dr.spec.host, dr.namespace));
    }
  return out;
}

test('a DestinationRule index derived edit after edit answers as one built whole, and keeps untouched hosts’ merged rules', () => {
  fc.assert(
    fc.property(fc.array(editArb, { minLength: 5, maxLength: 40 }), (edits) => {
      const files = new Map<string, FileLoad>();
      let config: MeshConfig = EMPTY_MESH_CONFIG;
      let last:
        | { index: DestinationRuleIndex; changed: Set<string>; answers: ReturnType<typeof answers> }
        | undefined;
      let changedSince = new Set<string>();
      for (const { path, rules, look } of edits) {
        const before = files.get(path);
        const after = rules.length > 0 ? fileLoad(path, rules) : undefined;
        if (after) files.set(path, after);
        else files.delete(path);
        const touched = new Set<string>();
        for (const load of [before, after])
          for (const r of load?.resources ?? []) touched.add(resourceKey(r));
        for (const h of hostsOf([before, after])) changedSince.add(h);
        config = meshConfigStep(config, mergeFiles(files.values()), touched, after?.resources ?? []).config;
        if (!look) continue;
        const index = new MeshIndex(config).destinationRules;
        const whole = DestinationRuleIndex.of(config.destinationRules);
        const got = answers(index);
        assert.deepEqual(got, answers(whole));
        if (last && ![...changedSince].some((h) => h.startsWith('*'))) {
          // A lookup of a host no edit since touched answers with the same object.
          let i = 0;
          for (const host of LOOKUP_HOSTS)
            for (let j = 0; j < NAMESPACES.length * (NAMESPACES.length + 1); j++, i++)
              if (!changedSince.has(host)) assert.equal(got[i], last.answers[i], `${host} kept its rule`);
        }
        last = { index, changed: changedSince, answers: got };
        changedSince = new Set();
      }
    }),
    { numRuns: 300 },
  );
});

test('an edit of one host’s rules merges that host’s edited group again, and only it', () => {
  const rule = (
    name: string,
    host: string,
    subsets: string[],
    file: string,
    exportTo?: string[],
  ): AnyConfigResource => ({
    ...destinationRule(name, {
      host,
      subsets: subsets.map((n) => ({ name: n, labels: { v: n } })),
      ...(exportTo && { exportTo }),
    }),
    file,
  });
  const load = (path: string, resources: AnyConfigResource[]): FileLoad => ({
    path,
    errors: [],
    warnings: [],
    resources,
    hostPosition: () => undefined,
  });
  // Host a: one group seen from shop only, one from default only (exportTo sets them apart).
  const files = [
    load('a.yaml', [
      rule('a1', 'a', ['v1'], 'a.yaml', ['shop']),
      rule('x1', 'a', ['v1'], 'a.yaml', ['.']),
      rule('b1', 'b', ['v1'], 'a.yaml'),
    ]),
    load('b.yaml', [
      rule('a2', 'a', ['v2'], 'b.yaml', ['shop']),
      rule('x2', 'a', ['v2'], 'b.yaml', ['.']),
      rule('b2', 'b', ['v2'], 'b.yaml'),
    ]),
  ];
  const first = meshConfigStep(EMPTY_MESH_CONFIG, mergeFiles(files)).config;
  const a = destinationRuleIndex(first.destinationRules);
  const [, x2, b2] = files[1]?.resources ?? [];
  const edit = load('b.yaml', [
    rule('a2', 'a', ['v3'], 'b.yaml', ['shop']),
    x2 as AnyConfigResource,
    b2 as AnyConfigResource,
  ]);
  const touched = ['DestinationRule/default/a2'];
  const next = meshConfigStep(
    first,
    mergeFiles([files[0] as FileLoad, edit]),
    touched,
    edit.resources,
  ).config;
  const b = destinationRuleIndex(next.destinationRules);
  const host = (h: string): string => `${h}.default.svc.cluster.local`;
  assert.equal(b.lookup(host('b'), 'default'), a.lookup(host('b'), 'default'), 'b keeps its merged rule');
  assert.equal(b.lookup(host('a'), 'default'), a.lookup(host('a'), 'default'), 'so does a’s other group');
  assert.deepEqual(
    b.lookup(host('a'), 'shop', 'default')?.spec.subsets?.map((s) => s.name),
    ['v1', 'v3'],
  );
  assert.deepEqual(
    mergeDestinationRules(next.destinationRules).rules.map((r) => r.spec.subsets?.map((s) => s.name)),
    [
      ['v1', 'v3'],
      ['v1', 'v2'],
      ['v1', 'v2'],
    ],
  );
});
