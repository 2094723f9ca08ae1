// The proxyless gRPC generators (CDS, EDS, LDS, RDS) against catalogs built with buildCatalog, and
// the resource name formats in xds/generators/names.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { EMPTY_MESH_CONFIG } from '../../../mesh/mesh-config.js';
import { buildCatalog } from '../../../model/catalog.js';
import type { Endpoint } from '../../../model/endpoint.js';
import type { Service } from '../../../model/service.js';
import type { GenerateContext, ResourceGenerator } from '../../../xds/generators/generator.js';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { grpcEndpointGenerator } from '../../../xds/generators/grpc/endpoint.js';
import { grpcListenerGenerator } from '../../../xds/generators/grpc/listener.js';
import { grpcRouteGenerator } from '../../../xds/generators/grpc/route.js';
import { GeneratorTable } from '../../../xds/generators/index.js';
import {
  clusterName,
  grpcListenerName,
  parseClusterName,
  parseHostPort,
} from '../../../xds/generators/names.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { encodeResource } from '../../../xds/proto/resource.js';
import {
  decodeAs,
  lbAddresses,
  type DecodedCluster,
  type DecodedListener,
  type DecodedLoadAssignment,
  type DecodedRouteConfiguration,
} from '../../support/decoded-xds.js';
import { DNS, grpcFixtureServices, NONE, ONE, TWO } from '../../support/grpc-fixture-mesh.js';
import { endpoint } from '../../support/model-fixtures.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

function ctxFor(services: readonly Service[], endpoints: Record<string, Endpoint[]> = {}): GenerateContext {
  const catalog = buildCatalog(services, new Map(Object.entries(endpoints)));
  return generateContext({
    proxy: proxyFromNode({ id: 'client-1', user_agent_name: 'gRPC Node' }),
    catalog,
    config: EMPTY_MESH_CONFIG,
  });
}

const defaultServices = grpcFixtureServices;

/** Builds `name` and decodes it as `T`; undefined when the generator has no such resource. */
function build<T>(g: ResourceGenerator, ctx: GenerateContext, name: string): T | undefined {
  const r = g.build(ctx, name);
  if (!r) return undefined;
  assert.equal(r.name, name, 'the resource keeps the requested name');
  assert.equal(r.typeUrl, g.typeUrl);
  return decodeAs<T>(r.typeUrl, r.value);
}

describe('gRPC CDS', () => {
  test('a wildcard lists outbound|PORT||HOST for every port of every STATIC or DNS service, not NONE', () => {
    const names = grpcClusterGenerator.wildcardNames(ctxFor(defaultServices));
    assert.deepEqual([...names].sort(), [
      'outbound|443||dns.test',
      'outbound|7070||one.test',
      'outbound|7070||two.test',
      'outbound|8080||two.test',
    ]);
  });

  test('a STATIC service port becomes an EDS cluster fetched over ADS', () => {
    const c = build<DecodedCluster>(grpcClusterGenerator, ctxFor(defaultServices), 'outbound|8080||two.test');
    assert.equal(c?.type, 'EDS');
    assert.equal(c?.eds_cluster_config?.service_name, 'outbound|8080||two.test');
    assert.deepEqual(c?.eds_cluster_config?.eds_config?.ads, {});
  });

  test('NONE resolution yields no cluster', () => {
    assert.equal(grpcClusterGenerator.build(ctxFor(defaultServices), 'outbound|9090||none.test'), undefined);
  });

  test('DNS resolution yields a LOGICAL_DNS cluster with one endpoint: the first one', () => {
    const ctx = ctxFor(defaultServices, {
      [DNS]: [endpoint('a.example.com', { grpc: 8443 }), endpoint('b.example.com', { grpc: 8443 })],
    });
    const c = build<DecodedCluster>(grpcClusterGenerator, ctx, 'outbound|443||dns.test');
    assert.equal(c?.type, 'LOGICAL_DNS');
    const groups = c?.load_assignment?.endpoints ?? [];
    assert.equal(groups.length, 1);
    assert.equal(groups[0]?.lb_endpoints?.length, 1);
    assert.deepEqual(groups[0]?.lb_endpoints?.[0]?.endpoint?.address?.socket_address, {
      address: 'a.example.com',
      port_value: 8443,
    });
  });

  test('a DNS service without endpoints resolves its own hostname on the service port', () => {
    const c = build<DecodedCluster>(grpcClusterGenerator, ctxFor(defaultServices), 'outbound|443||dns.test');
    assert.deepEqual(
      c?.load_assignment?.endpoints?.[0]?.lb_endpoints?.[0]?.endpoint?.address?.socket_address,
      {
        address: DNS,
        port_value: 443,
      },
    );
  });

  for (const name of [
    'outbound|7071||one.test', // no such port
    'outbound|7070||missing.test', // no such service
    'outbound|7070|v1|one.test', // subsets are not served
    'inbound|7070||one.test',
    'one.test:7070',
  ]) {
    test(`no cluster for ${name}`, () => {
      assert.equal(grpcClusterGenerator.build(ctxFor(defaultServices), name), undefined);
    });
  }
});

describe('gRPC LDS', () => {
  test('a listener HOST:PORT holds an api_listener whose HCM fetches routes HOST:PORT over ADS', () => {
    const l = build<DecodedListener>(grpcListenerGenerator, ctxFor(defaultServices), 'two.test:8080');
    const hcm = l?.api_listener?.api_listener;
    assert.equal(
      hcm?.['@type'],
      'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
    );
    assert.equal(hcm?.rds?.route_config_name, 'two.test:8080');
    assert.deepEqual(hcm?.rds?.config_source?.ads, {});
    const last = hcm?.http_filters?.at(-1);
    assert.equal(
      last?.typed_config?.['@type'],
      'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router',
    );
  });

  const hostOnly: { name: string; route: string | undefined }[] = [
    { name: ONE, route: 'one.test:7070' },
    { name: TWO, route: undefined },
  ];
  for (const c of hostOnly) {
    test(`a listener named HOST without port resolves only for single-port services (${c.name})`, () => {
      const l = build<DecodedListener>(grpcListenerGenerator, ctxFor(defaultServices), c.name);
      assert.equal(l !== undefined, c.route !== undefined);
      if (!c.route) return;
      assert.equal(l?.name, c.name);
      assert.equal(l?.api_listener?.api_listener?.rds?.route_config_name, c.route);
    });
  }

  test('NONE resolution yields no listener', () => {
    assert.equal(grpcListenerGenerator.build(ctxFor(defaultServices), 'none.test:9090'), undefined);
    assert.equal(grpcListenerGenerator.build(ctxFor(defaultServices), NONE), undefined);
  });

  for (const name of ['one.test:7071', 'missing.test:7070', 'one.test:0', ':7070', '']) {
    test(`no listener for ${JSON.stringify(name)}`, () => {
      assert.equal(grpcListenerGenerator.build(ctxFor(defaultServices), name), undefined);
    });
  }

  test('a wildcard lists HOST:PORT for every service port', () => {
    const names = grpcListenerGenerator.wildcardNames(ctxFor(defaultServices.slice(0, 2)));
    assert.deepEqual([...names].sort(), ['one.test:7070', 'two.test:7070', 'two.test:8080']);
  });
});

describe('gRPC RDS', () => {
  test('a route configuration routes its virtual host to the service port cluster', () => {
    const rc = build<DecodedRouteConfiguration>(grpcRouteGenerator, ctxFor(defaultServices), 'two.test:8080');
    const vhosts = rc?.virtual_hosts ?? [];
    assert.equal(vhosts.length, 1);
    assert.deepEqual(
      vhosts[0]?.domains,
      ['two.test:8080'],
      'a multi-port service is matched only with its port',
    );
    assert.deepEqual(vhosts[0]?.routes, [
      { match: { prefix: '/' }, route: { cluster: 'outbound|8080||two.test' } },
    ]);
  });

  test('a single-port service is also matched by its bare hostname', () => {
    const rc = build<DecodedRouteConfiguration>(grpcRouteGenerator, ctxFor(defaultServices), 'one.test:7070');
    assert.deepEqual(rc?.virtual_hosts?.[0]?.domains, ['one.test:7070', 'one.test']);
  });

  test('a route configuration is served only under its canonical HOST:PORT name', () => {
    assert.equal(grpcRouteGenerator.build(ctxFor(defaultServices), ONE), undefined);
  });
});

describe('gRPC EDS', () => {
  const NAME = 'outbound|7070||two.test';

  function assignment(endpoints: Endpoint[], name = NAME): DecodedLoadAssignment | undefined {
    return build<DecodedLoadAssignment>(
      grpcEndpointGenerator,
      ctxFor(defaultServices, { [TWO]: endpoints }),
      name,
    );
  }

  test('endpoints are grouped by locality, groups sorted, each weighted by the sum of its endpoint weights', () => {
    const a = assignment([
      endpoint(
        '10.0.0.3',
        { grpc: 9000 },
        { locality: { region: 'r2', zone: 'z1', subzone: '' }, weight: 2 },
      ),
      endpoint(
        '10.0.0.1',
        { grpc: 9000 },
        { locality: { region: 'r1', zone: 'z2', subzone: 's' }, weight: 3 },
      ),
      endpoint(
        '10.0.0.2',
        { grpc: 9000 },
        { locality: { region: 'r1', zone: 'z1', subzone: '' }, weight: 1 },
      ),
      endpoint(
        '10.0.0.4',
        { grpc: 9000 },
        { locality: { region: 'r2', zone: 'z1', subzone: '' }, weight: 5 },
      ),
    ]);
    const groups = (a?.endpoints ?? []).map((g) => ({
      locality: g.locality,
      weight: g.load_balancing_weight?.value,
      addresses: lbAddresses({ endpoints: [g] }),
    }));
    assert.deepEqual(groups, [
      { locality: { region: 'r1', zone: 'z1', sub_zone: '' }, weight: 1, addresses: ['10.0.0.2'] },
      { locality: { region: 'r1', zone: 'z2', sub_zone: 's' }, weight: 3, addresses: ['10.0.0.1'] },
      {
        locality: { region: 'r2', zone: 'z1', sub_zone: '' },
        weight: 7,
        addresses: ['10.0.0.3', '10.0.0.4'],
      },
    ]);
  });

  test('every locality group has a load_balancing_weight > 0, even without a locality', () => {
    const a = assignment([
      endpoint('10.0.0.1', { grpc: 9000 }, { locality: { region: '', zone: '', subzone: '' } }),
    ]);
    assert.equal(a?.endpoints?.length, 1);
    assert.ok((a?.endpoints?.[0]?.load_balancing_weight?.value ?? 0) > 0);
  });

  test('endpoints not serving the port are excluded; the others use their target port', () => {
    const a = assignment([
      endpoint('10.0.0.1', { grpc: 9000, http: 9080 }),
      endpoint('10.0.0.2', { http: 9080 }),
    ]);
    const lb = (a?.endpoints ?? []).flatMap((g) => g.lb_endpoints ?? []);
    assert.deepEqual(
      lb.map((e) => e.endpoint?.address?.socket_address),
      [{ address: '10.0.0.1', port_value: 9000 }],
    );
  });

  test('the assignment, built in wire form, has the bytes encodeResource makes of the same message', () => {
    const ctx = ctxFor(defaultServices, {
      [TWO]: [
        endpoint('10.0.0.2', { grpc: 9000 }, { health: 'DRAINING', weight: 3 }),
        endpoint('10.0.0.1', { grpc: 9001 }, { locality: { region: 'r1', zone: 'z1', subzone: 's1' } }),
        endpoint('10.0.0.3', { grpc: 9000 }, { health: 'UNHEALTHY' }),
      ],
    });
    const built = grpcEndpointGenerator.build(ctx, NAME);
    assert.ok(built);
    // decodeAny's object form names enums; encodeResource turns it back through fromObject.
    const { ['@type']: _type, ...message } = decodeAny(ENDPOINT, built.value);
    const reference = encodeResource(ENDPOINT, NAME, message);
    assert.deepEqual(built.value, reference.value);
    assert.equal(built.version, reference.version);
  });

  const healthCases: Endpoint['health'][] = ['HEALTHY', 'UNHEALTHY', 'DRAINING'];
  for (const health of healthCases) {
    test(`endpoint health ${health} maps to health_status ${health}`, () => {
      const a = assignment([endpoint('10.0.0.1', { grpc: 9000 }, { health })]);
      assert.equal(a?.endpoints?.[0]?.lb_endpoints?.[0]?.health_status, health);
    });
  }

  test('a service port without endpoints gets an empty assignment', () => {
    const a = assignment([]);
    assert.equal(a?.cluster_name, NAME);
    assert.equal(a?.endpoints, undefined);
  });

  for (const name of [
    'outbound|443||dns.test',
    'outbound|9090||none.test',
    'outbound|7070||missing.test',
    'outbound|7070|v1|two.test',
  ]) {
    test(`no load assignment for ${name}`, () => {
      assert.equal(assignment([endpoint('10.0.0.1', { grpc: 9000 })], name), undefined);
    });
  }
});

test('the generator table finds the gRPC generator for each type URL, and Envoy its own', () => {
  const table = new GeneratorTable();
  assert.equal(table.find('grpc', CLUSTER), grpcClusterGenerator);
  assert.equal(table.find('grpc', ENDPOINT), grpcEndpointGenerator);
  assert.equal(table.find('grpc', LISTENER), grpcListenerGenerator);
  assert.equal(table.find('grpc', ROUTE), grpcRouteGenerator);
  for (const type of [CLUSTER, ENDPOINT, LISTENER, ROUTE]) {
    const envoy = table.find('envoy', type);
    assert.equal(envoy?.proxyKind, 'envoy');
    assert.equal(envoy.typeUrl, type);
  }
});

describe('names', () => {
  const clusterKeys = [
    { direction: 'outbound', port: 80, subset: '', hostname: 'a.test' },
    { direction: 'inbound', port: 65535, subset: 'v1', hostname: 'b.example.internal' },
    { direction: 'outbound', port: 1, subset: '', hostname: '10.1.2.3' },
  ] as const;
  for (const k of clusterKeys) {
    test(`cluster name round trip: ${clusterName(k.direction, k.port, k.subset, k.hostname)}`, () => {
      assert.deepEqual(parseClusterName(clusterName(k.direction, k.port, k.subset, k.hostname)), k);
    });
  }

  const badClusterNames = [
    '',
    'a.test',
    'outbound|80|a.test',
    'outbound|80||a.test|x',
    'sideways|80||a.test',
    'outbound|0||a.test',
    'outbound|65536||a.test',
    'outbound|8o||a.test',
    'outbound|-1||a.test',
    'outbound|||a.test',
  ];
  for (const bad of badClusterNames) {
    test(`parseClusterName rejects ${JSON.stringify(bad)}`, () => {
      assert.equal(parseClusterName(bad), undefined);
    });
  }

  const hostPorts: [string, number][] = [
    ['a.test', 7070],
    ['10.0.0.1', 1],
    ['x', 65535],
  ];
  for (const [host, port] of hostPorts) {
    test(`listener name round trip: ${grpcListenerName(host, port)}`, () => {
      assert.deepEqual(parseHostPort(grpcListenerName(host, port)), { hostname: host, port });
    });
  }

  test('parseHostPort accepts a bare hostname without port', () => {
    assert.deepEqual(parseHostPort('a.test'), { hostname: 'a.test' });
  });

  for (const bad of [
    '',
    ':80',
    'a.test:',
    'a.test:0',
    'a.test:65536',
    'a.test:http',
    'a.test:123456',
    'a.test:-1',
  ]) {
    test(`parseHostPort rejects ${JSON.stringify(bad)}`, () => {
      assert.equal(parseHostPort(bad), undefined);
    });
  }
});
