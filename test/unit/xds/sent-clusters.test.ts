// No route names a cluster the proxy is not sent (docs/push.md): a mesh whose VirtualServices route
// to an unknown host, an undefined subset, a port the service does not have and a NONE-resolved
// service (which gRPC has no cluster for), by http, tcp, weighted, mirror and gateway routes. Envoy's
// full set (LDS/CDS wildcard, referenced RDS/EDS) passes the consistency check; a proxyless gRPC
// client, following its routes' cluster names as gRFC A28 clients do, is served every one of them
// and every EDS assignment they name. Such destinations go to BlackHoleCluster, as Istio's route to
// a missing cluster fails; real ones keep their names.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type { GatewaySpec, VirtualServiceSpec } from '../../../mesh/types.js';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { grpcEndpointGenerator } from '../../../xds/generators/grpc/endpoint.js';
import { grpcRouteGenerator } from '../../../xds/generators/grpc/route.js';
import { BLACKHOLE_CLUSTER } from '../../../xds/generators/names.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { CLUSTER, ENDPOINT, ROUTE, TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { checkConsistency } from '../../../xds/validate/consistency.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { configResource } from '../../support/mesh-fixtures.js';
import { at, list } from '../envoy/at.js';
import {
  collect,
  decodedByName,
  ECHO,
  fixtureCatalog,
  fixtureMeshConfig,
  fixtureProxies,
  INGRESS_LABELS,
  LEGACY,
  ORIGINAL,
  REVIEWS,
  type Collected,
} from '../envoy/fixture-mesh.js';

const catalog = fixtureCatalog();
const proxies = fixtureProxies();
const GHOST = 'ghost.mesh.internal';

const DANGLING_HTTP: VirtualServiceSpec = {
  hosts: [REVIEWS],
  http: [
    { match: [{ headers: { to: { exact: 'ghost' } } }], route: [{ destination: { host: GHOST } }] },
    {
      match: [{ headers: { to: { exact: 'v9' } } }],
      route: [{ destination: { host: REVIEWS, subset: 'v9' } }],
    },
    {
      match: [{ headers: { to: { exact: 'port' } } }],
      route: [{ destination: { host: REVIEWS, port: { number: 9999 } } }],
    },
    { match: [{ headers: { to: { exact: 'none' } } }], route: [{ destination: { host: ORIGINAL } }] },
    {
      match: [{ headers: { to: { exact: 'split' } } }],
      route: [
        { destination: { host: REVIEWS, subset: 'v1' }, weight: 50 },
        { destination: { host: GHOST }, weight: 30 },
        { destination: { host: REVIEWS, subset: 'v9' }, weight: 20 },
      ],
    },
    { route: [{ destination: { host: REVIEWS } }], mirror: { host: GHOST } },
  ],
};

const GATEWAY: GatewaySpec = {
  selector: INGRESS_LABELS,
  servers: [
    { port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] },
    { port: { number: 5432, name: 'pg', protocol: 'TCP' }, hosts: ['*'] },
  ],
};

let generation = 7000;
function danglingMesh(): MeshConfig {
  const base = fixtureMeshConfig();
  return {
    ...base,
    generation: ++generation,
    gateways: [configResource('Gateway', 'ingress', GATEWAY)],
    destinationRules: [
      ...base.destinationRules,
      configResource('DestinationRule', 'legacy-racks', {
        host: LEGACY,
        subsets: [{ name: 'rack-z', labels: { rack: 'z' } }],
      }),
    ],
    virtualServices: [
      configResource('VirtualService', 'reviews', DANGLING_HTTP),
      configResource('VirtualService', 'edge', {
        hosts: ['edge.example.com'],
        gateways: ['ingress'],
        http: [{ route: [{ destination: { host: GHOST } }] }],
      }),
      configResource('VirtualService', 'edge-tcp', {
        hosts: ['db.example.com'],
        gateways: ['ingress'],
        tcp: [{ route: [{ destination: { host: GHOST, port: { number: 5432 } } }] }],
      }),
      configResource('VirtualService', 'legacy', {
        hosts: [LEGACY],
        http: [{ route: [{ destination: { host: LEGACY, subset: 'rack-z' } }] }],
      }),
      configResource('VirtualService', 'echo', {
        hosts: [ECHO],
        tcp: [{ route: [{ destination: { host: ECHO, subset: 'v9' } }] }],
      }),
    ],
  };
}

function valid(collected: Collected): Collected {
  for (const [typeUrl, resources] of collected)
    for (const r of resources)
      assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], r.name);
  return collected;
}

function reviewsRoutes(c: Collected, routeName: string): unknown[] {
  const route = decodedByName(c, ROUTE).get(routeName) ?? assert.fail(`route ${routeName}`);
  const vh = list(route, 'virtual_hosts').find((v) => list(v, 'domains').includes(REVIEWS));
  return list(vh, 'routes');
}

test('envoy sidecars and the gateway: every cluster a route or tcp_proxy names is in CDS', () => {
  const config = danglingMesh();
  for (const name of ['transparent', 'explicit', 'httpProxy', 'allModes', 'scoped', 'gateway'] as const) {
    const c = valid(collect(proxies[name] ?? assert.fail(), catalog, config));
    assert.deepEqual(checkConsistency(c), [], name);
  }
});

test('envoy: dangling destinations go to BlackHoleCluster, real ones keep their cluster', () => {
  const c = collect(proxies.transparent ?? assert.fail(), catalog, danglingMesh());
  const routes = reviewsRoutes(c, '9080');
  assert.deepEqual(
    routes.slice(0, 4).map((r) => at(r, 'route.cluster')),
    [BLACKHOLE_CLUSTER, BLACKHOLE_CLUSTER, BLACKHOLE_CLUSTER, `outbound|9000||${ORIGINAL}`],
  );
  assert.deepEqual(
    list(routes[4], 'route.weighted_clusters.clusters').map((w) => [at(w, 'name'), at(w, 'weight.value')]),
    [
      [`outbound|9080|v1|${REVIEWS}`, 50],
      [BLACKHOLE_CLUSTER, 50],
    ],
    'the dangling destinations share one entry with their summed weight',
  );
  assert.equal(at(routes[5], 'route.cluster'), `outbound|9080||${REVIEWS}`);
  assert.equal(at(routes[5], 'route.request_mirror_policies'), undefined, 'a mirror to nowhere is left out');
  assert.ok(decodedByName(c, CLUSTER).has(BLACKHOLE_CLUSTER));
});

/** What a gRPC client dialing `host:port` is sent: its route, every cluster it names, their EDS. */
function grpcFollow(config: MeshConfig, target: string): { clusters: string[]; problems: string[] } {
  const proxy = proxyFromNode({
    id: 'client',
    user_agent_name: 'gRPC Node',
    metadata: { NAMESPACE: 'default' },
  });
  const ctx = generateContext({ proxy, catalog, config });
  const route = grpcRouteGenerator.build(ctx, target) ?? assert.fail(`route ${target}`);
  assert.deepEqual(validateEncoded(ROUTE.slice(TYPE_URL_PREFIX.length), route.value), []);
  const names = new Set<string>();
  for (const vh of list(decodeAny(route.typeUrl, route.value), 'virtual_hosts'))
    for (const r of list(vh, 'routes')) {
      const single = at(r, 'route.cluster');
      if (typeof single === 'string') names.add(single);
      for (const w of list(r, 'route.weighted_clusters.clusters')) names.add(String(at(w, 'name')));
    }
  const problems: string[] = [];
  for (const name of names) {
    const cluster = grpcClusterGenerator.build(ctx, name);
    if (!cluster) {
      problems.push(`route names cluster ${name}, which is not served`);
      continue;
    }
    assert.deepEqual(validateEncoded(CLUSTER.slice(TYPE_URL_PREFIX.length), cluster.value), [], name);
    const decoded = decodeAny(cluster.typeUrl, cluster.value);
    if (at(decoded, 'type') !== 'EDS') continue;
    const edsName = at(decoded, 'eds_cluster_config.service_name');
    const serviceName = typeof edsName === 'string' && edsName !== '' ? edsName : name;
    const cla = grpcEndpointGenerator.build(ctx, serviceName);
    if (!cla) problems.push(`EDS cluster ${name} has no assignment`);
    else
      assert.deepEqual(validateEncoded(ENDPOINT.slice(TYPE_URL_PREFIX.length), cla.value), [], serviceName);
  }
  return { clusters: [...names], problems };
}

test('proxyless gRPC: a DNS service’s subset matching no endpoint is served, without endpoints', () => {
  const { clusters, problems } = grpcFollow(danglingMesh(), `${LEGACY}:80`);
  assert.deepEqual(problems, []);
  assert.deepEqual(clusters, [`outbound|80|rack-z|${LEGACY}`]);
});

test('proxyless gRPC: every cluster its routes name is served, with its load assignment', () => {
  const { clusters, problems } = grpcFollow(danglingMesh(), `${REVIEWS}:9080`);
  assert.deepEqual(problems, []);
  assert.ok(clusters.includes(BLACKHOLE_CLUSTER), 'the dangling destinations (and NONE-resolved) go nowhere');
  assert.ok(
    !clusters.includes(`outbound|9000||${ORIGINAL}`),
    'gRPC has no cluster for a NONE-resolved service',
  );
  assert.ok(clusters.includes(`outbound|9080|v1|${REVIEWS}`));
});
