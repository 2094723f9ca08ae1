// Pushes that clients will not reject: the capability table's `rejects` checks (each says no to the
// resource its clients NACK and yes to its fixed form, and matches only those clients), the one
// question clientRejection asks, and the withholding generator: the last good build is served in
// place of a rejected one, nothing when there is none, the reads are still recorded, and the
// withheld registry says what and clears once the config is fixed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../../log/logger.js';
import { EMPTY_MESH_CONFIG } from '../../../mesh/mesh-config.js';
import { buildCatalog } from '../../../model/catalog.js';
import type { Endpoint } from '../../../model/endpoint.js';
import type { ResourceGenerator } from '../../../xds/generators/generator.js';
import { grpcEndpointGenerator } from '../../../xds/generators/grpc/endpoint.js';
import { GeneratorTable } from '../../../xds/generators/index.js';
import { clusterName } from '../../../xds/generators/names.js';
import { generateContext, recordedBuild } from '../../../xds/generators/serving-view.js';
import { encodeResource, type EncodedResource } from '../../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT } from '../../../xds/proto/type-urls.js';
import {
  CLIENT_RULES,
  profileFor,
  type ClientId,
  type ClientRule,
} from '../../../xds/proxy/client-capabilities.js';
import { proxyFromNode, type Proxy } from '../../../xds/proxy/proxy.js';
import { clientRejection } from '../../../xds/validate/acceptance.js';
import { WithheldPushes } from '../../../xds/validate/withheld.js';
import { withholdingGenerator } from '../../../xds/validate/withholding-generator.js';
import { endpoint, service } from '../../support/model-fixtures.js';

const GRPC_JS: ClientId = { kind: 'grpc', userAgent: 'gRPC Node', userAgentVersion: '1.14.1' };
const CCORE: ClientId = {
  kind: 'grpc',
  userAgent: 'gRPC C-core linux Python',
  userAgentVersion: 'C-core 29.0.0 Python 1.51.1',
};
const ENVOY: ClientId = { kind: 'envoy', userAgent: 'envoy', userAgentVersion: '1.31.0' };

const jsProxy = proxyFromNode({ id: 'js', user_agent_name: 'gRPC Node', user_agent_version: '1.14.1' });
const ccoreProxy = proxyFromNode({
  id: 'ccore',
  user_agent_name: CCORE.userAgent,
  user_agent_version: CCORE.userAgentVersion,
});
const envoyProxy = proxyFromNode({
  id: 'sidecar~10.0.0.1~a.default~default.svc.cluster.local',
  user_agent_name: 'envoy',
});

const rule = (id: string): ClientRule => {
  const r = CLIENT_RULES.find((x) => x.id === id);
  assert.ok(r, id);
  return r;
};

type Group = { zone: string; weight: number; priority?: number; addresses: [string, number][] };
function assignment(name: string, groups: readonly Group[]): EncodedResource {
  return encodeResource(ENDPOINT, name, {
    cluster_name: name,
    endpoints: groups.map((g) => ({
      locality: { region: 'r', zone: g.zone },
      load_balancing_weight: { value: g.weight },
      priority: g.priority ?? 0,
      lb_endpoints: g.addresses.map(([address, port_value]) => ({
        endpoint: { address: { socket_address: { address, port_value } } },
        load_balancing_weight: { value: 1 },
      })),
    })),
  });
}

test('grpc-eds-duplicate-address: an address:port listed twice is rejected, distinct ones are not; every gRPC client, not Envoy', () => {
  const r = rule('grpc-eds-duplicate-address');
  for (const c of [GRPC_JS, CCORE]) assert.ok(r.matches(c), JSON.stringify(c));
  assert.ok(!r.matches(ENVOY));
  const bad = assignment('c', [
    { zone: 'a', weight: 1, addresses: [['10.0.0.1', 80]] },
    { zone: 'b', weight: 1, addresses: [['10.0.0.1', 80]] },
  ]);
  const good = assignment('c', [
    { zone: 'a', weight: 1, addresses: [['10.0.0.1', 80]] },
    {
      zone: 'b',
      weight: 1,
      addresses: [
        ['10.0.0.1', 81],
        ['10.0.0.2', 80],
      ],
    },
  ]);
  const message = clientRejection(jsProxy, ENDPOINT, bad);
  assert.match(
    message ?? '',
    /grpc-eds-duplicate-address.*endpoints\[1\]\.lb_endpoints\[0\]: duplicate endpoint address 10\.0\.0\.1:80/,
  );
  assert.ok(clientRejection(ccoreProxy, ENDPOINT, bad));
  assert.equal(clientRejection(jsProxy, ENDPOINT, good), undefined);
  assert.equal(clientRejection(envoyProxy, ENDPOINT, bad), undefined, 'Envoy takes it');
});

test('grpc-eds-priority-weight-sum: locality weights over 2^32-1 at one priority are rejected, split across priorities they are not', () => {
  const r = rule('grpc-eds-priority-weight-sum');
  for (const c of [GRPC_JS, CCORE]) assert.ok(r.matches(c));
  assert.ok(!r.matches(ENVOY));
  const big = 3_000_000_000;
  const bad = assignment('c', [
    { zone: 'a', weight: big, addresses: [['10.0.0.1', 80]] },
    { zone: 'b', weight: big, addresses: [['10.0.0.2', 80]] },
  ]);
  const good = assignment('c', [
    { zone: 'a', weight: big, addresses: [['10.0.0.1', 80]] },
    { zone: 'b', weight: big, priority: 1, addresses: [['10.0.0.2', 80]] },
  ]);
  assert.match(clientRejection(ccoreProxy, ENDPOINT, bad) ?? '', /priority 0 add up to 6000000000/);
  assert.equal(clientRejection(ccoreProxy, ENDPOINT, good), undefined);
});

test('envoy-validate-rules: Envoy nodes only, on the config-derived types (not EDS)', () => {
  const r = rule('envoy-validate-rules');
  assert.ok(r.matches(ENVOY));
  assert.ok(!r.matches(GRPC_JS) && !r.matches(CCORE));
  const cluster = (seconds: number): EncodedResource =>
    encodeResource(CLUSTER, 'c', {
      name: 'c',
      type: 'EDS',
      connect_timeout: { seconds },
      eds_cluster_config: { eds_config: { ads: {} } },
    });
  assert.match(
    clientRejection(envoyProxy, CLUSTER, cluster(-1)) ?? '',
    /envoy-validate-rules.*connect_timeout/,
  );
  assert.equal(clientRejection(envoyProxy, CLUSTER, cluster(1)), undefined);
  assert.equal(
    clientRejection(jsProxy, CLUSTER, cluster(-1)),
    undefined,
    'gRPC clients are not checked by it',
  );
  assert.deepEqual(
    profileFor(ENVOY)
      .checks(ENDPOINT)
      .map((c) => c.rule.id),
    [],
  );
});

test('a versioned rejecting rule gives its clients a check key of their own; common rules do not', () => {
  const versioned: ClientRule = {
    id: 'test-versioned',
    clients: 'grpc-js 1.14 only',
    matches: (c) => c.userAgent === 'gRPC Node' && c.userAgentVersion.startsWith('1.14.'),
    rejects: [{ typeUrl: CLUSTER, check: () => 'no' }],
    rendering: '',
    reason: '',
    reference: '',
    versioned: true,
  };
  const rules = [...CLIENT_RULES, versioned];
  assert.equal(profileFor(GRPC_JS, rules).checkKey(CLUSTER), 'test-versioned');
  assert.equal(profileFor(GRPC_JS, rules).checkKey(ENDPOINT), '', 'the common EDS checks');
  assert.equal(profileFor({ ...GRPC_JS, userAgentVersion: '1.15.0' }, rules).checkKey(CLUSTER), '');
  assert.equal(profileFor(CCORE, rules).checkKey(CLUSTER), '');
});

/** A generator whose next build is whatever the test says. */
function scripted(): { gen: ResourceGenerator; next: (r: EncodedResource | undefined) => void } {
  let value: EncodedResource | undefined;
  const gen: ResourceGenerator = {
    typeUrl: ENDPOINT,
    proxyKind: 'grpc',
    viewKey: (p) => p.namespace,
    wildcardNames: () => [],
    build: () => value,
  };
  return { gen, next: (r) => (value = r) };
}

const ctxFor = (proxy: Proxy) =>
  generateContext({ proxy, catalog: buildCatalog([], new Map()), config: EMPTY_MESH_CONFIG });
const good1 = assignment('c', [{ zone: 'a', weight: 1, addresses: [['10.0.0.1', 80]] }]);
const good2 = assignment('c', [
  {
    zone: 'a',
    weight: 1,
    addresses: [
      ['10.0.0.1', 80],
      ['10.0.0.2', 80],
    ],
  },
]);
const dup = assignment('c', [
  { zone: 'a', weight: 1, addresses: [['10.0.0.1', 80]] },
  { zone: 'b', weight: 1, addresses: [['10.0.0.1', 80]] },
]);

test('withholding: a rejected build is answered with the last good one, recorded, and cleared once a good one comes', () => {
  const { gen, next } = scripted();
  let now = 1000;
  const withheld = new WithheldPushes(10, () => now);
  const g = withholdingGenerator(gen, withheld, silentLogger);
  const ctx = ctxFor(jsProxy);
  next(good1);
  assert.equal(g.build(ctx, 'c'), good1);
  next(dup);
  assert.equal(g.build(ctx, 'c'), good1, 'the last good version, the same object the cache holds');
  now = 2000;
  assert.equal(g.build(ctx, 'c')?.version, good1.version);
  const [entry, ...rest] = withheld.list();
  assert.deepEqual(rest, []);
  assert.ok(entry);
  assert.equal(entry.rule, 'grpc-eds-duplicate-address');
  assert.equal(entry.name, 'c');
  assert.equal(entry.userAgent, 'gRPC Node');
  assert.equal(entry.lastGood, true);
  assert.equal(entry.since, 1000);
  assert.equal(entry.count, 2);
  next(good2);
  assert.equal(g.build(ctx, 'c'), good2, 'fixed: the new version is served');
  assert.deepEqual(withheld.list(), []);
});

test('withholding: with no last good build the resource is absent, and said so; Envoy, whose rules do not cover EDS, is sent it', () => {
  const { gen, next } = scripted();
  const withheld = new WithheldPushes();
  const g = withholdingGenerator(gen, withheld, silentLogger);
  next(dup);
  assert.equal(g.build(ctxFor(ccoreProxy), 'c'), undefined);
  assert.equal(withheld.list()[0]?.lastGood, false);
  const envoyGen = withholdingGenerator({ ...gen, proxyKind: 'envoy' }, withheld, silentLogger);
  assert.equal(envoyGen.build(ctxFor(envoyProxy), 'c'), dup);
  next(undefined);
  assert.equal(g.build(ctxFor(ccoreProxy), 'c'), undefined);
  assert.deepEqual(withheld.list(), [], 'a resource no longer built is withheld no more');
});

test('withholding keeps the build’s reads: the change that fixes the endpoints rebuilds it', () => {
  const host = 'echo.default.svc.cluster.local';
  const eps = (second: string): Endpoint[] => [
    endpoint('10.0.0.1', { grpc: 7070 }, { locality: { region: 'r', zone: 'a', subzone: '' } }),
    endpoint(second, { grpc: 7070 }, { locality: { region: 'r', zone: 'b', subzone: '' } }),
  ];
  const catalog = buildCatalog(
    [service(host, [{ name: 'grpc', number: 7070, protocol: 'GRPC' }])],
    new Map([[host, eps('10.0.0.1')]]),
  );
  const withheld = new WithheldPushes();
  const g = withholdingGenerator(grpcEndpointGenerator, withheld, silentLogger);
  const name = clusterName('outbound', 7070, '', host);
  const built = recordedBuild(
    generateContext({ proxy: jsProxy, catalog, config: EMPTY_MESH_CONFIG }),
    (ctx) => g.build(ctx, name),
  );
  assert.equal(built.value, undefined, 'the duplicate address is withheld (first build: absent)');
  assert.ok(built.reads.endpoints.has(host), 'what it read is recorded all the same');
  assert.equal(withheld.list()[0]?.rule, 'grpc-eds-duplicate-address');
});

test('the generator table wraps only when given a registry, and the registry is bounded', () => {
  assert.equal(new GeneratorTable().find('grpc', ENDPOINT), grpcEndpointGenerator, 'diff’s raw generators');
  const withheld = new WithheldPushes(2);
  assert.notEqual(
    new GeneratorTable(undefined, false, undefined, withheld).find('grpc', ENDPOINT),
    grpcEndpointGenerator,
  );
  for (const name of ['a', 'b', 'c'])
    withheld.record({
      kind: 'grpc',
      typeUrl: ENDPOINT,
      viewKey: '',
      name,
      userAgent: '',
      userAgentVersion: '',
      rule: 'r',
      reason: 'x'.repeat(5000),
      version: 'v',
      lastGood: true,
    });
  assert.deepEqual(
    withheld.list().map((e) => e.name),
    ['b', 'c'],
  );
  assert.ok((withheld.list()[0]?.reason.length ?? 0) <= 1001);
});
