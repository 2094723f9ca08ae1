// The examples of docs/traffic.md (examples/traffic/*.yaml): each loads cleanly and is quoted
// verbatim in the doc; the cluster-side ones render here as the doc says (the route-side ones are
// run end to end by test/integration/grpc-traffic.test.ts).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../../../config-dir/load-file.js';
import { buildSnapshot } from '../../../config-dir/conversion.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { nextMeshConfig, EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import { buildCatalog } from '../../../model/catalog.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { checkConsistency } from '../../../xds/validate/consistency.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { at, list } from './at.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { collect, decodedByName, envoyProxy, type Collected } from './fixture-mesh.js';

/** Cluster-side examples, rendered below. */
const FILES = [
  'circuit-breaking.yaml',
  'load-balancing.yaml',
  'subsets.yaml',
  'sidecar.yaml',
  'locality-workloads.yaml',
  'locality-failover.yaml',
  'locality-distribute.yaml',
  'locality-failover-priority.yaml',
];
/** Route-side examples: the end-to-end traffic test runs them against real gRPC clients. */
const ROUTE_FILES = [
  'canary.yaml',
  'destination-rule.yaml',
  'echo-service.yaml',
  'fault-injection.yaml',
  'header-routing.yaml',
  'retries-timeouts.yaml',
];
const REVIEWS = 'reviews.shop.svc.cluster.local';
const CART = 'cart.shop.svc.cluster.local';
const PAYMENTS = 'payments.example.com';
const TELEMETRY = 'telemetry.istio-system.svc.cluster.local';
const ORDERS = 'orders.other.svc.cluster.local';

function repoRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'examples', 'traffic'))) return dir;
  return resolve('.');
}
const root = repoRoot();
const read = (file: string): string => readFileSync(join(root, 'examples', 'traffic', file), 'utf8');

// One generation sequence, as one config directory would give: listener memos are per generation.
let mesh: MeshConfig = EMPTY_MESH_CONFIG;
function meshOf(file: string): MeshConfig {
  const load = loadConfigFile(file, read(file));
  assert.deepEqual([load.errors, load.warnings], [[], []], file);
  mesh = nextMeshConfig(mesh, mergeFiles([load]));
  return mesh;
}

const catalog = buildCatalog(
  [
    service(REVIEWS, [servicePort('http', 8080, 'HTTP')], { namespace: 'shop' }),
    service(CART, [servicePort('http', 8080, 'HTTP'), servicePort('admin', 9090, 'HTTP')], {
      namespace: 'shop',
    }),
    service(PAYMENTS, [servicePort('tls', 443, 'TLS'), servicePort('http', 80, 'HTTP')], {
      namespace: 'edge',
      resolution: 'DNS',
    }),
    service(TELEMETRY, [servicePort('grpc', 9000)], { namespace: 'istio-system' }),
    service(ORDERS, [servicePort('http', 8080, 'HTTP')], { namespace: 'other' }),
  ],
  new Map([
    [
      REVIEWS,
      [
        endpoint('10.1.0.1', { http: 8080 }, { labels: { version: 'v1' } }),
        endpoint('10.1.0.2', { http: 8080 }, { labels: { version: 'v2' } }),
      ],
    ],
    [CART, [endpoint('10.1.0.3', { http: 8080, admin: 9090 })]],
    [TELEMETRY, [endpoint('10.1.0.4', { grpc: 9000 })]],
    [ORDERS, [endpoint('10.1.0.5', { http: 8080 })]],
  ]),
);

const shopProxy = (labels: Record<string, string> = {}) =>
  envoyProxy('sidecar~10.1.0.9~web-1~shop.svc', {
    NAMESPACE: 'shop',
    INTERCEPTION_MODE: 'REDIRECT',
    LABELS: labels,
  });

function render(file: string, labels: Record<string, string> = {}): Collected {
  const c = collect(shopProxy(labels), catalog, meshOf(file));
  for (const [typeUrl, resources] of c)
    for (const r of resources)
      assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], r.name);
  assert.deepEqual(checkConsistency(c), []);
  return c;
}

function cluster(c: Collected, name: string): Record<string, unknown> {
  return decodedByName(c, CLUSTER).get(name) ?? assert.fail(`${name} missing`);
}

test('examples/traffic holds the files docs/traffic.md shows and the end-to-end traffic test loads', () => {
  const all = readdirSync(join(root, 'examples', 'traffic')).filter((f) => f.endsWith('.yaml'));
  assert.deepEqual(all.sort(), [...ROUTE_FILES, ...FILES].sort());
});

// Every example (route side: loaded by test/integration/grpc-traffic.test.ts; cluster side: below).
for (const file of [...ROUTE_FILES, ...FILES])
  test(`examples/traffic/${file} is shown verbatim in docs/traffic.md and loads cleanly`, () => {
    const doc = readFileSync(join(root, 'docs', 'traffic.md'), 'utf8');
    assert.ok(doc.includes('```yaml\n' + read(file) + '```'), `${file} is not in docs/traffic.md as written`);
    const load = loadConfigFile(file, read(file));
    assert.deepEqual([load.errors, load.warnings], [[], []]);
    assert.ok(load.resources.length > 0);
  });

test('circuit-breaking.yaml: thresholds, connect timeout and consecutive-5xx ejection', () => {
  const reviews = cluster(render('circuit-breaking.yaml'), `outbound|8080||${REVIEWS}`);
  const t = at(reviews, 'circuit_breakers.thresholds[0]');
  assert.deepEqual(
    ['max_connections', 'max_pending_requests', 'max_requests', 'max_retries'].map((f) =>
      at(t, `${f}.value`),
    ),
    [100, 10, 200, 3],
  );
  assert.equal(at(reviews, 'connect_timeout.nanos'), 500_000_000);
  assert.equal(at(reviews, 'outlier_detection.consecutive_5xx.value'), 5);
  assert.equal(at(reviews, 'outlier_detection.max_ejection_percent.value'), 50);
});

test('load-balancing.yaml: ring hash on 8080, least request on the admin port', () => {
  const c = render('load-balancing.yaml');
  const web = cluster(c, `outbound|8080||${CART}`);
  assert.equal(at(web, 'lb_policy'), 'RING_HASH');
  assert.equal(at(web, 'ring_hash_lb_config.minimum_ring_size.value'), '2048');
  assert.equal(at(cluster(c, `outbound|9090||${CART}`), 'lb_policy'), 'LEAST_REQUEST');
});

test('subsets.yaml: a cluster per version with only its instances; v2’s own policy', () => {
  const c = render('subsets.yaml');
  const addresses = (name: string) =>
    list(decodedByName(c, ENDPOINT).get(name), 'endpoints')
      .flatMap((l) => list(l, 'lb_endpoints'))
      .map((e) => at(e, 'endpoint.address.socket_address.address'));
  assert.deepEqual(addresses(`outbound|8080|v1|${REVIEWS}`), ['10.1.0.1']);
  assert.deepEqual(addresses(`outbound|8080|v2|${REVIEWS}`), ['10.1.0.2']);
  const v2 = cluster(c, `outbound|8080|v2|${REVIEWS}`);
  assert.equal(at(v2, 'lb_policy'), 'LEAST_REQUEST');
  assert.equal(at(v2, 'circuit_breakers.thresholds[0].max_requests.value'), 50);
  assert.equal(at(cluster(c, `outbound|8080|v1|${REVIEWS}`), 'lb_policy'), 'ROUND_ROBIN');
});

test('sidecar.yaml: shop proxies get shop and istio-system only; frontends also payments on 443', () => {
  const hosts = (c: Collected) =>
    [...decodedByName(c, CLUSTER).keys()].filter((n) => n.startsWith('outbound|')).sort();
  assert.deepEqual(hosts(render('sidecar.yaml')), [
    `outbound|8080||${CART}`,
    `outbound|8080||${REVIEWS}`,
    `outbound|9000||${TELEMETRY}`,
    `outbound|9090||${CART}`,
  ]);
  const frontend = render('sidecar.yaml', { app: 'frontend' });
  assert.ok(hosts(frontend).includes(`outbound|443||${PAYMENTS}`));
  assert.ok(hosts(frontend).includes(`outbound|80||${PAYMENTS}`), 'clusters: every port of a named service');
  const listeners = decodedByName(frontend, LISTENER);
  assert.equal(
    at(listeners.get('0.0.0.0_443'), 'filter_chains[0].filters[0].typed_config.cluster'),
    `outbound|443||${PAYMENTS}`,
  );
  assert.ok(!listeners.has('0.0.0.0_80'), 'listeners: payments on 443 only');
  const route = decodedByName(render('sidecar.yaml'), ROUTE).get('8080');
  assert.equal(at(list(route, 'virtual_hosts').at(-1), 'name'), 'block_all', 'REGISTRY_ONLY');
});

// The locality examples: locality-workloads.yaml (echo in us-east-1a, us-east-1b and us-west-2a)
// with each DestinationRule, rendered for Envoy sidecars where the doc says.
const ECHO_CLUSTER = 'outbound|50051||echo.example.internal';

/** Each locality group of echo's assignment for a sidecar at `locality` (on `network`). */
function localityView(
  ruleFile: string,
  locality: { region: string; zone: string },
  network = '',
): { zone: string; priority: number; weight: number }[] {
  const loads = ['locality-workloads.yaml', ruleFile].map((f) => loadConfigFile(f, read(f)));
  const merged = mergeFiles(loads);
  const { snapshot } = buildSnapshot(merged.serviceEntries, merged.workloadEntries);
  mesh = nextMeshConfig(mesh, merged);
  const proxy = proxyFromNode({
    id: 'sidecar~10.1.0.9~web-1~default.svc',
    user_agent_name: 'envoy',
    metadata: { INTERCEPTION_MODE: 'REDIRECT', ...(network && { NETWORK: network }) },
    locality,
  });
  const c = collect(proxy, buildCatalog(snapshot.services.values(), snapshot.endpoints), mesh);
  for (const [typeUrl, resources] of c)
    for (const r of resources)
      assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], r.name);
  assert.deepEqual(checkConsistency(c), []);
  return list(decodedByName(c, ENDPOINT).get(ECHO_CLUSTER), 'endpoints').map((g) => ({
    zone: at(g, 'locality.zone') as string,
    priority: (at(g, 'priority') as number | undefined) ?? 0,
    weight: at(g, 'load_balancing_weight.value') as number,
  }));
}

const EAST = { region: 'us-east', zone: 'us-east-1a' };
const WEST = { region: 'us-west', zone: 'us-west-2a' };

test('locality-failover.yaml: same zone, then same region, then the failover region', () => {
  assert.deepEqual(
    localityView('locality-failover.yaml', EAST).map((g) => [g.zone, g.priority]),
    [
      ['us-east-1a', 0],
      ['us-east-1b', 1],
      ['us-west-2a', 2],
    ],
  );
  assert.deepEqual(
    localityView('locality-failover.yaml', WEST).map((g) => [g.zone, g.priority]),
    [
      ['us-west-2a', 0],
      ['us-east-1a', 1],
      ['us-east-1b', 1],
    ],
  );
});

test('locality-distribute.yaml: 80 split over us-east’s zones and 20 to us-west; us-west keeps its own', () => {
  assert.deepEqual(
    localityView('locality-distribute.yaml', EAST).map((g) => [g.zone, g.priority, g.weight]),
    [
      ['us-east-1a', 0, 40],
      ['us-east-1b', 0, 40],
      ['us-west-2a', 0, 20],
    ],
  );
  assert.deepEqual(
    localityView('locality-distribute.yaml', WEST).map((g) => [g.zone, g.weight]),
    [['us-west-2a', 100]],
  );
});

test('locality-failover-priority.yaml: the client’s network and region, then the rest', () => {
  assert.deepEqual(
    localityView('locality-failover-priority.yaml', EAST, 'east-net').map((g) => [g.zone, g.priority]),
    [
      ['us-east-1a', 0],
      ['us-east-1b', 0],
      ['us-west-2a', 1],
    ],
  );
});
