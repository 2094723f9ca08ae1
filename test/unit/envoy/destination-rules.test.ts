// DestinationRule → Envoy clusters: each traffic-policy field's cluster form, subsets as clusters with
// their own endpoints, Istio's merge of subset and port-level settings, which rule applies, and the
// defaults when none does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import type { DestinationRuleResource, DestinationRuleSpec } from '../../../mesh/types.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { mergePolicy } from '../../../xds/traffic/traffic-policy.js';
import { CLUSTER, ENDPOINT } from '../../../xds/proto/type-urls.js';
import { at, list } from './at.js';
import {
  CACHE,
  collect,
  decodedByName,
  ECHO,
  envoyProxy,
  fixtureCatalog,
  fixtureMeshConfig,
  fixtureProxies,
  LEGACY,
  LEDGER,
  SHOP,
  VM_IP,
  WEB,
  type Collected,
} from './fixture-mesh.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { destinationRule } from '../../support/mesh-fixtures.js';

type Obj = Record<string, unknown>;
const HTTP_OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';
const UNLIMITED = 4294967295;

const catalog = fixtureCatalog();
const sidecar = fixtureProxies().transparent ?? assert.fail();

function get(c: Collected, typeUrl: string, name: string): Obj {
  const r = decodedByName(c, typeUrl).get(name);
  assert.ok(r, `${name} is served (have ${[...decodedByName(c, typeUrl).keys()].join(', ')})`);
  return r;
}

function httpOptions(cluster: Obj): unknown {
  return (at(cluster, 'typed_extension_protocol_options') as Obj | undefined)?.[HTTP_OPTIONS];
}

function endpointAddresses(cla: Obj): unknown[] {
  return list(cla, 'endpoints')
    .flatMap((l) => list(l, 'lb_endpoints'))
    .map((e) => at(e, 'endpoint.address.socket_address.address'));
}

function dr(
  name: string,
  namespace: string,
  spec: DestinationRuleSpec,
  exportTo?: string[],
): DestinationRuleResource {
  return destinationRule(name, exportTo ? { ...spec, exportTo } : spec, namespace);
}

function meshWith(destinationRules: DestinationRuleResource[]): MeshConfig {
  return { ...EMPTY_MESH_CONFIG, generation: 7, destinationRules };
}

test('consistentHash → RING_HASH with the rule’s minimum ring size', () => {
  const echo = get(collect(sidecar, catalog), CLUSTER, `outbound|7070||${ECHO}`);
  assert.equal(at(echo, 'lb_policy'), 'RING_HASH');
  assert.equal(at(echo, 'ring_hash_lb_config.minimum_ring_size.value'), '2048');
});

test('connectionPool → circuit breaker thresholds over the wide-open defaults, connect timeout, keepalive', () => {
  const echo = get(collect(sidecar, catalog), CLUSTER, `outbound|7070||${ECHO}`);
  const t = at(echo, 'circuit_breakers.thresholds[0]');
  assert.equal(at(t, 'priority'), 'DEFAULT');
  assert.equal(at(t, 'max_connections.value'), 100);
  assert.equal(at(t, 'max_requests.value'), 500);
  assert.equal(at(t, 'max_retries.value'), 2);
  assert.equal(at(t, 'max_pending_requests.value'), UNLIMITED, 'unset fields keep the default');
  assert.deepEqual(
    [at(echo, 'connect_timeout.seconds'), at(echo, 'connect_timeout.nanos')],
    ['0', 250_000_000],
  );
  const keepalive = at(echo, 'upstream_connection_options.tcp_keepalive');
  assert.deepEqual(
    [
      at(keepalive, 'keepalive_probes.value'),
      at(keepalive, 'keepalive_time.value'),
      at(keepalive, 'keepalive_interval.value'),
    ],
    [3, 60, 10],
  );
  const options = httpOptions(echo);
  assert.equal(at(options, 'common_http_protocol_options.max_requests_per_connection.value'), 10);
  assert.equal(at(options, 'explicit_http_config.http2_protocol_options.max_concurrent_streams.value'), 50);
});

test('outlierDetection → consecutive 5xx and gateway ejection, success rate off, panic threshold', () => {
  const echo = get(collect(sidecar, catalog), CLUSTER, `outbound|7070||${ECHO}`);
  const od = at(echo, 'outlier_detection');
  assert.equal(at(od, 'consecutive_5xx.value'), 3);
  assert.equal(at(od, 'enforcing_consecutive_5xx.value'), 100);
  assert.equal(at(od, 'consecutive_gateway_failure.value'), 2);
  assert.equal(at(od, 'enforcing_consecutive_gateway_failure.value'), 100);
  assert.equal(at(od, 'enforcing_success_rate.value'), 0);
  assert.equal(at(od, 'interval.seconds'), '5');
  assert.equal(at(od, 'base_ejection_time.seconds'), '60');
  assert.equal(at(od, 'max_ejection_percent.value'), 50);
  assert.equal(at(echo, 'common_lb_config.healthy_panic_threshold.value'), 20);
});

test('deprecated consecutiveErrors (gateway errors), local-origin failures, client protocol, connection lifetime', () => {
  const legacy = get(collect(sidecar, catalog), CLUSTER, `outbound|80||${LEGACY}`);
  const od = at(legacy, 'outlier_detection');
  assert.equal(at(od, 'consecutive_gateway_failure.value'), 6);
  assert.equal(at(od, 'enforcing_consecutive_gateway_failure.value'), 100);
  assert.equal(at(od, 'enforcing_consecutive_5xx.value'), 0, 'consecutiveErrors counts gateway errors only');
  assert.equal(at(od, 'consecutive_local_origin_failure.value'), 4);
  assert.equal(at(od, 'split_external_local_origin_errors'), true);
  assert.equal(
    at(legacy, 'common_lb_config.healthy_panic_threshold.value'),
    0,
    'Istio’s default panic threshold',
  );
  const options = httpOptions(legacy);
  assert.equal(at(options, 'common_http_protocol_options.max_connection_duration.seconds'), '3600');
  assert.equal(
    at(options, 'use_downstream_protocol_config.http2_protocol_options.max_concurrent_streams.value'),
    8,
  );
  assert.equal(at(options, 'explicit_http_config'), undefined);
});

test('simple load balancers: RANDOM, LEAST_REQUEST (LEAST_CONN alias), PASSTHROUGH as ORIGINAL_DST', () => {
  const c = collect(sidecar, catalog);
  assert.equal(at(get(c, CLUSTER, `outbound|8080||${WEB}`), 'lb_policy'), 'RANDOM');
  const cache = get(c, CLUSTER, `outbound|6379||${CACHE}`);
  assert.deepEqual([at(cache, 'type'), at(cache, 'lb_policy')], ['ORIGINAL_DST', 'CLUSTER_PROVIDED']);
  assert.equal(at(cache, 'eds_cluster_config'), undefined, 'no endpoints of ours behind a passthrough');
  assert.ok(!decodedByName(c, ENDPOINT).has(`outbound|6379||${CACHE}`));
  const leastConn = meshWith([
    dr('shop', 'default', { host: SHOP, trafficPolicy: { loadBalancer: { simple: 'LEAST_CONN' } } }),
  ]);
  assert.equal(
    at(get(collect(sidecar, catalog, leastConn), CLUSTER, `outbound|8080||${SHOP}`), 'lb_policy'),
    'LEAST_REQUEST',
  );
});

test('portLevelSettings apply to their port: HTTP/1.1 upgraded to h2, pending requests, idle timeout', () => {
  const web = get(collect(sidecar, catalog), CLUSTER, `outbound|8080||${WEB}`);
  const options = httpOptions(web);
  assert.ok(at(options, 'explicit_http_config.http2_protocol_options'), 'h2UpgradePolicy UPGRADE');
  assert.equal(at(options, 'common_http_protocol_options.idle_timeout.seconds'), '30');
  assert.equal(at(web, 'circuit_breakers.thresholds[0].max_pending_requests.value'), 10);
  assert.equal(at(web, 'lb_policy'), 'RANDOM', 'the top-level balancer stays where the port sets none');
  const other = meshWith([
    dr('shop', 'default', {
      host: SHOP,
      trafficPolicy: {
        connectionPool: { tcp: { maxConnections: 7 } },
        portLevelSettings: [{ port: { number: 9901 }, connectionPool: { tcp: { maxConnections: 3 } } }],
      },
    }),
  ]);
  const c = collect(sidecar, catalog, other);
  assert.equal(
    at(get(c, CLUSTER, `outbound|8080||${SHOP}`), 'circuit_breakers.thresholds[0].max_connections.value'),
    7,
  );
  assert.equal(
    at(get(c, CLUSTER, `outbound|9901||${SHOP}`), 'circuit_breakers.thresholds[0].max_connections.value'),
    3,
  );
});

test('subsets: one cluster per subset and port, its EDS holding only the labelled endpoints', () => {
  const c = collect(sidecar, catalog);
  const v1 = get(c, CLUSTER, `outbound|7070|v1|${ECHO}`);
  assert.equal(at(v1, 'type'), 'EDS');
  assert.equal(at(v1, 'eds_cluster_config.service_name'), `outbound|7070|v1|${ECHO}`);
  assert.deepEqual(endpointAddresses(get(c, ENDPOINT, `outbound|7070|v1|${ECHO}`)), [VM_IP]);
  assert.deepEqual(endpointAddresses(get(c, ENDPOINT, `outbound|7070|v2|${ECHO}`)), ['10.0.0.4']);
  assert.deepEqual(endpointAddresses(get(c, ENDPOINT, `outbound|7070||${ECHO}`)), [VM_IP, '10.0.0.4']);
  // A DNS service's subset is its labelled DNS names.
  const rackA = get(c, CLUSTER, `outbound|80|rack-a|${LEGACY}`);
  assert.equal(at(rackA, 'type'), 'LOGICAL_DNS');
  assert.deepEqual(endpointAddresses(at(rackA, 'load_assignment') as Obj), ['old-1.dns.internal']);
  assert.ok(!decodedByName(c, CLUSTER).has(`outbound|8080|v1|${WEB}`), 'no subsets where the rule has none');
});

test('a subset’s policy replaces the rule’s component by component (Istio’s merge)', () => {
  const c = collect(sidecar, catalog);
  const v1 = get(c, CLUSTER, `outbound|7070|v1|${ECHO}`);
  const v2 = get(c, CLUSTER, `outbound|7070|v2|${ECHO}`);
  assert.equal(at(v1, 'lb_policy'), 'RING_HASH', 'v1 inherits the rule’s balancer');
  assert.equal(at(v2, 'lb_policy'), 'LEAST_REQUEST', 'v2 sets its own');
  assert.equal(at(v2, 'ring_hash_lb_config'), undefined);
  assert.equal(at(v2, 'circuit_breakers.thresholds[0].max_connections.value'), 100, 'pool inherited');
  assert.equal(at(v2, 'outlier_detection.consecutive_5xx.value'), 3, 'outlier detection inherited');
});

test('mergePolicy: rule, then rule port-level, then subset, then subset port-level', () => {
  const pool = (n: number) => ({ tcp: { maxConnections: n } });
  const merged = mergePolicy(
    {
      loadBalancer: { simple: 'RANDOM' },
      connectionPool: pool(1),
      outlierDetection: { consecutive5xxErrors: 1 },
      portLevelSettings: [
        { port: { number: 80 }, connectionPool: pool(2), outlierDetection: { consecutive5xxErrors: 2 } },
      ],
    },
    {
      connectionPool: pool(3),
      portLevelSettings: [{ port: { number: 80 }, loadBalancer: { simple: 'LEAST_REQUEST' } }],
    },
    80,
  );
  assert.deepEqual(merged, {
    loadBalancer: { simple: 'LEAST_REQUEST' },
    connectionPool: pool(3),
    outlierDetection: { consecutive5xxErrors: 2 },
  });
  assert.deepEqual(mergePolicy({ connectionPool: pool(1) }, undefined, 81), { connectionPool: pool(1) });
});

test('no DestinationRule: today’s defaults (ROUND_ROBIN, 10 s connect timeout, circuit breakers wide open)', () => {
  // The ledger service has no DestinationRule in the fixture (shop has the routes' hashing rule).
  const shop = get(collect(sidecar, catalog), CLUSTER, `outbound|7000||${LEDGER}`);
  assert.equal(at(shop, 'lb_policy'), 'ROUND_ROBIN');
  assert.equal(at(shop, 'connect_timeout.seconds'), '10');
  const t = at(shop, 'circuit_breakers.thresholds[0]');
  for (const f of ['max_connections', 'max_pending_requests', 'max_requests', 'max_retries'])
    assert.equal(at(t, `${f}.value`), UNLIMITED, f);
  assert.equal(at(shop, 'outlier_detection'), undefined);
  const empty = collect(sidecar, catalog, { ...fixtureMeshConfig(), destinationRules: [] });
  assert.ok(
    ![...decodedByName(empty, CLUSTER).keys()].some(
      (n) => n.split('|')[2] !== '' && n.startsWith('outbound'),
    ),
  );
});

test('the most specific host wins; a rule exported to its own namespace shapes only that namespace’s proxies', () => {
  const config = meshWith([
    dr('all', 'default', { host: '*.mesh.internal', trafficPolicy: { loadBalancer: { simple: 'RANDOM' } } }),
    dr('shop', 'default', { host: SHOP, trafficPolicy: { loadBalancer: { simple: 'LEAST_REQUEST' } } }),
    dr('mine', 'team', { host: SHOP, subsets: [{ name: 'blue', labels: { colour: 'blue' } }] }, ['.']),
  ]);
  const c = collect(sidecar, catalog, config);
  assert.equal(at(get(c, CLUSTER, `outbound|8080||${SHOP}`), 'lb_policy'), 'LEAST_REQUEST');
  assert.equal(at(get(c, CLUSTER, `outbound|8080||${WEB}`), 'lb_policy'), 'RANDOM');
  assert.ok(!decodedByName(c, CLUSTER).has(`outbound|8080|blue|${SHOP}`));

  const team = envoyProxy(`sidecar~10.0.0.8~t-1~team.svc`, {
    NAMESPACE: 'team',
    INTERCEPTION_MODE: 'REDIRECT',
  });
  const t = collect(team, catalog, config);
  assert.ok(decodedByName(t, CLUSTER).has(`outbound|8080|blue|${SHOP}`), 'the team namespace’s own rule');
  assert.equal(at(get(t, CLUSTER, `outbound|8080||${SHOP}`), 'lb_policy'), 'ROUND_ROBIN');

  const cds = envoyGenerators().find((g) => g.typeUrl === CLUSTER) ?? assert.fail();
  assert.notEqual(cds.viewKey(team), cds.viewKey(sidecar), 'CDS is cached per namespace');
});

test('a subset cluster the proxy’s rule does not define is not served', () => {
  const cds = envoyGenerators().find((g) => g.typeUrl === CLUSTER) ?? assert.fail();
  const source = { proxy: sidecar, catalog, config: fixtureMeshConfig() };
  const ctx = generateContext(source);
  assert.ok(cds.build(ctx, `outbound|7070|v1|${ECHO}`));
  assert.equal(cds.build(ctx, `outbound|7070|v9|${ECHO}`), undefined);
  assert.equal(
    cds.build(generateContext({ ...source, config: EMPTY_MESH_CONFIG }), `outbound|7070|v1|${ECHO}`),
    undefined,
  );
});
