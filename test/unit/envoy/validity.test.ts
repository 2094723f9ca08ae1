// Every resource Portolan generates for Envoy passes the (validate.rules) of Envoy's own protos and
// the cross-resource consistency check; and the validator does reject what Envoy would reject.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EMPTY_MESH_CONFIG } from '../../../mesh/mesh-config.js';
import type { Logger } from '../../../log/logger.js';
import type { ResourceGenerator } from '../../../xds/generators/generator.js';
import { GeneratorTable } from '../../../xds/generators/index.js';
import { TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { validatePushesEnabled, validatingGenerator } from '../../../xds/validate/validating-generator.js';
import { checkConsistency } from '../../../xds/validate/consistency.js';
import { validateEncoded, validateObject } from '../../../xds/validate/pgv-validator.js';
import { encodeResource } from '../../../xds/proto/resource.js';
import { CLUSTER, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { checkPushConsistency } from '../../../xds/validate/push-consistency.js';
import { collect, fixtureCatalog, fixtureMeshConfig, fixtureProxies } from './fixture-mesh.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

const catalog = fixtureCatalog();

for (const [name, proxy] of Object.entries(fixtureProxies())) {
  test(`every resource for the ${name} proxy passes Envoy's validation rules`, () => {
    const collected = collect(proxy, catalog);
    let count = 0;
    for (const [typeUrl, resources] of collected) {
      for (const r of resources) {
        count += 1;
        assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], `${r.name}`);
      }
    }
    assert.ok((collected.get(LISTENER)?.length ?? 0) > 0, 'has listeners');
    assert.ok(count > 5);
  });

  test(`the ${name} proxy's config is consistent (routes, clusters, load assignments all present)`, () => {
    assert.deepEqual(checkConsistency(collect(proxy, catalog)), []);
  });
}

test('the validator rejects a Cluster with an empty name', () => {
  const v = validateObject('envoy.config.cluster.v3.Cluster', { name: '', connect_timeout: { seconds: 1 } });
  assert.deepEqual(
    v.map((x) => x.path),
    ['name'],
  );
});

test('the validator rejects an undefined enum value', () => {
  const v = validateObject('envoy.config.cluster.v3.Cluster', { name: 'c', lb_policy: 77 });
  assert.deepEqual(
    v.map((x) => x.path),
    ['lb_policy'],
  );
  assert.match(v[0]?.message ?? '', /not a defined value/);
});

test('the validator rejects a negative duration', () => {
  const v = validateObject('envoy.config.cluster.v3.Cluster', {
    name: 'c',
    connect_timeout: { seconds: -5 },
  });
  assert.deepEqual(
    v.map((x) => x.path),
    ['connect_timeout'],
  );
});

test('the validator checks required oneofs, min_items and required messages inside nested messages', () => {
  const v = validateObject('envoy.config.route.v3.RouteConfiguration', {
    name: 'r',
    virtual_hosts: [{ name: 'vh', domains: [], routes: [{ route: { cluster: 'c' } }] }],
  });
  assert.deepEqual(v.map((x) => x.path).sort(), [
    'virtual_hosts[0].domains',
    'virtual_hosts[0].routes[0].match',
  ]);
});

test('the validator follows google.protobuf.Any (an HCM without stat_prefix inside a listener)', () => {
  const listener = {
    name: 'l',
    address: { socket_address: { address: '0.0.0.0', port_value: 80 } },
    filter_chains: [
      {
        filters: [
          {
            name: 'hcm',
            typed_config: {
              type_url: `${TYPE_URL_PREFIX}envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`,
              value: Buffer.alloc(0),
            },
          },
        ],
      },
    ],
  };
  const paths = validateObject('envoy.config.listener.v3.Listener', listener).map((x) => x.path);
  assert.ok(paths.includes('filter_chains[0].filters[0].typed_config.stat_prefix'), paths.join(', '));
  assert.ok(paths.includes('filter_chains[0].filters[0].typed_config.route_specifier'), paths.join(', '));
});

test('the validator applies scalar rules to wrapper types and port bounds', () => {
  const v = validateObject('envoy.config.core.v3.SocketAddress', { address: 'a', port_value: 70000 });
  assert.deepEqual(
    v.map((x) => x.path),
    ['port_value'],
  );
  const w = validateObject('envoy.config.route.v3.WeightedCluster', { clusters: [] });
  assert.deepEqual(
    w.map((x) => x.path),
    ['clusters'],
  );
});

test('the consistency check names a missing route configuration, cluster and load assignment', () => {
  const collected = collect(fixtureProxies().transparent ?? assert.fail(), catalog);
  const routes = collected.get(ROUTE) ?? [];
  collected.set(
    ROUTE,
    routes.filter((r) => r.name !== '8080'),
  );
  const clusters = collected.get(CLUSTER) ?? [];
  collected.set(CLUSTER, [
    ...clusters.filter((c) => c.name !== 'outbound|5432||db.mesh.internal'),
    encodeResource(CLUSTER, 'orphan', {
      name: 'orphan',
      type: 'EDS',
      eds_cluster_config: { service_name: 'orphan', eds_config: { ads: {} } },
    }),
  ]);
  const problems = checkConsistency(collected);
  assert.ok(
    problems.some((p) => p.includes('route configuration 8080')),
    problems.join('\n'),
  );
  assert.ok(
    problems.some((p) => p.includes('outbound|5432||db.mesh.internal')),
    problems.join('\n'),
  );
  assert.ok(
    problems.some((p) => p.includes('EDS cluster orphan has no ClusterLoadAssignment')),
    problems.join('\n'),
  );
});

test('with PORTOLAN_VALIDATE_PUSHES an invalid generated resource is logged and withheld', () => {
  const bad: ResourceGenerator = {
    typeUrl: CLUSTER,
    proxyKind: 'envoy',
    viewKey: () => '',
    wildcardNames: () => ['good', ''],
    build: (_ctx, name) => encodeResource(CLUSTER, name, { name, connect_timeout: { seconds: 1 } }),
  };
  const logged: unknown[] = [];
  const logger = { error: (obj: unknown) => logged.push(obj) } as unknown as Logger;
  const table = new GeneratorTable([validatingGenerator(bad, logger)], false);
  const g = table.find('envoy', CLUSTER) ?? assert.fail('generator');
  const ctx = generateContext({
    proxy: fixtureProxies().explicit ?? assert.fail(),
    catalog,
    config: EMPTY_MESH_CONFIG,
  });
  assert.equal(g.build(ctx, 'good')?.name, 'good');
  assert.equal(g.build(ctx, ''), undefined);
  assert.equal(logged.length, 1);
  // A line about a proxy carries its id as `node`, the field the readable log format leads with.
  assert.equal((logged[0] as { node?: string }).node, ctx.proxy.id);
  assert.equal(validatePushesEnabled({ PORTOLAN_VALIDATE_PUSHES: '1' }), true);
  assert.equal(validatePushesEnabled({}), false);
});

test('the per-push check logs each Envoy view whose set dangles, once per view, and passes good ones', () => {
  const proxies = fixtureProxies();
  const transparent = proxies.transparent ?? assert.fail();
  const good = new GeneratorTable(envoyGenerators(), false);
  const ctx = (proxy: typeof transparent) => generateContext({ proxy, catalog, config: fixtureMeshConfig() });
  const logged: { node: string; proxy: string; violations: string[] }[] = [];
  const logger = {
    error: (fields: { node: string; proxy: string; violations: string[] }) => logged.push(fields),
  } as unknown as Logger;
  const views = Object.values(proxies).map(ctx);
  assert.equal(checkPushConsistency(good, views, logger), 0);
  assert.equal(logged.length, 0);

  // An RDS generator that has lost route configuration 8080: every sidecar view that uses it dangles.
  const routes = good.find('envoy', ROUTE) ?? assert.fail('RDS generator');
  const broken = new GeneratorTable(
    [
      ...envoyGenerators().filter((g) => g.typeUrl !== ROUTE),
      { ...routes, build: (c, name) => (name === '8080' ? undefined : routes.build(c, name)) },
    ],
    false,
  );
  const failed = checkPushConsistency(broken, [...views, ctx(transparent)], logger);
  assert.ok(failed >= 1);
  assert.equal(logged.length, failed); // the repeated transparent view is checked once
  assert.ok(logged.some((l) => l.proxy === transparent.id && l.violations.some((v) => v.includes('8080'))));
  assert.ok(
    logged.every((l) => l.node === l.proxy),
    'each line names its node',
  );
});
