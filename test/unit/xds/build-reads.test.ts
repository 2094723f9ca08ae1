// What a build records (xds/generators/recording-context.ts): each catalog lookup and listing, each
// rule lookup by host, each other index lookup and config field by kind, and a memoized value's
// reads at every use; and that a generator wrapped for validation keeps every member but build.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import { buildCatalog } from '../../../model/catalog.js';
import {
  recordedBuild,
  type GenerateContext,
  type ReadSet,
  type ResourceGenerator,
} from '../../../xds/generators/generator.js';
import { DEFAULT_GENERATORS } from '../../../xds/generators/index.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { memoSlot } from '../../../xds/generators/view-memo.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { validatingGenerator } from '../../../xds/validate/validating-generator.js';
import { destinationRule } from '../../support/mesh-fixtures.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';

const A = 'a.reads.internal';
const B = 'b.reads.internal';
const config: MeshConfig = { ...EMPTY_MESH_CONFIG, destinationRules: [destinationRule('b', { host: B })] };
const ctx = generateContext({
  proxy: proxyFromNode({ id: 'p1', user_agent_name: 'gRPC Node' }),
  catalog: buildCatalog(
    [service(A, [servicePort('grpc', 7070)]), service(B, [servicePort('grpc', 7070)])],
    new Map([[A, [endpoint('10.0.0.1', { grpc: 9000 })]]]),
  ),
  config,
});

/** The keys `build` read, as sorted strings. */
function readsOf(build: (ctx: GenerateContext) => unknown): string[] {
  return keys(recordedBuild(ctx, build).reads);
}

function keys(reads: ReadSet): string[] {
  return [
    ...[...reads.services].map((h) => `service:${h}`),
    ...[...reads.endpoints].map((h) => `endpoints:${h}`),
    ...[...reads.rules].map((h) => `rules:${h}`),
    ...[...reads.kinds].map((k) => `kind:${k}`),
    ...(reads.allServices ? ['all services'] : []),
    ...(reads.allEndpoints ? ['all endpoints'] : []),
  ].sort();
}

test('catalog reads are recorded by host; listings as reading every service (and endpoint)', () => {
  assert.deepEqual(
    readsOf((c) => c.catalog.service(A)),
    [`service:${A}`],
  );
  assert.deepEqual(
    readsOf((c) => c.catalog.endpoints(A, 7070)),
    [`endpoints:${A}`, `service:${A}`],
    'endpoints of a port read the service’s port names too',
  );
  assert.deepEqual(
    readsOf((c) => c.catalog.services()),
    ['all services'],
  );
  assert.deepEqual(
    readsOf((c) => c.catalog.endpointsByIp(['10.0.0.1'])),
    ['all endpoints', 'all services'],
  );
});

test('rule lookups are recorded by host, other lookups and config fields by kind', () => {
  assert.deepEqual(
    readsOf((c) => c.index.destinationRules.lookup(B, 'default')),
    [`rules:${B}`],
  );
  assert.deepEqual(
    readsOf((c) => c.index.virtualServices.lookup(A, 'default')),
    [`rules:${A}`],
  );
  assert.deepEqual(
    readsOf((c) => c.index.sidecars.scope('default', {})),
    ['kind:sidecars'],
  );
  assert.deepEqual(
    readsOf((c) => c.index.authorization.policiesFor({ namespace: 'default', labels: {} })),
    ['kind:authorizationPolicies'],
  );
  assert.deepEqual(
    readsOf((c) => c.config.gateways),
    ['kind:gateways'],
  );
  assert.deepEqual(
    readsOf((c) => c.index.config.destinationRules),
    ['kind:destinationRules'],
    'the index’s config records as the context’s does',
  );
  assert.deepEqual(
    readsOf((c) => c.config.pathNormalization),
    [],
    'a serve-wide setting is no read of the config',
  );
});

test('a memoized value’s reads are added to every build that uses it, built or found', () => {
  const SLOT = memoSlot<number>('ports of B');
  const use = (c: GenerateContext): number =>
    c.memo.get(SLOT, '', c, (m) => m.catalog.service(B)?.ports.length ?? 0);
  assert.deepEqual(readsOf(use), [`service:${B}`], 'the build that made it');
  assert.deepEqual(readsOf(use), [`service:${B}`], 'a later build that found it');
  assert.deepEqual(
    readsOf((c) => [c.catalog.service(A), use(c)]),
    [`service:${A}`, `service:${B}`],
  );
});

test('a generator wrapped for validation keeps every member of the one it wraps but build', () => {
  const extra = { ...DEFAULT_GENERATORS[0], future: () => 'kept' } as ResourceGenerator & {
    future(): string;
  };
  for (const inner of [...DEFAULT_GENERATORS, extra]) {
    const wrapped = validatingGenerator(inner) as ResourceGenerator & Record<string, unknown>;
    for (const [key, value] of Object.entries(inner)) {
      if (key === 'build') continue;
      assert.equal(wrapped[key], value, `${inner.proxyKind} ${inner.typeUrl}: ${key}`);
    }
    assert.ok(!Object.is(Reflect.get(wrapped, 'build'), Reflect.get(inner, 'build')), 'build is wrapped');
  }
});
