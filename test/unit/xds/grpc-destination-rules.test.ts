// DestinationRule → proxyless gRPC clusters: what gRPC honours is rendered (RING_HASH, circuit
// breaker max_requests, subsets), the rest is left out and listed as a limitation; Sidecar scoping
// does not apply to gRPC clients, which are sent what they ask for by name.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { grpcEndpointGenerator } from '../../../xds/generators/grpc/endpoint.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { clusterLimitations } from '../../../xds/traffic/cluster-limitations.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { at, list } from '../envoy/at.js';
import {
  CACHE,
  ECHO,
  fixtureCatalog,
  fixtureMeshConfig,
  LEGACY,
  SCOPED_NAMESPACE,
  SHOP,
  VM_IP,
  WEB,
} from '../envoy/fixture-mesh.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

const catalog = fixtureCatalog();
const config = fixtureMeshConfig();
const grpcProxy = (namespace = 'default') =>
  proxyFromNode({
    id: `client-${namespace}`,
    user_agent_name: 'gRPC Node',
    metadata: { NAMESPACE: namespace },
  });
const ctx = generateContext({ proxy: grpcProxy(), catalog, config });

function cluster(name: string, context = ctx): Record<string, unknown> {
  const r = grpcClusterGenerator.build(context, name);
  assert.ok(r, `${name} is served`);
  assert.deepEqual(validateEncoded(r.typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], name);
  return decodeAny(r.typeUrl, r.value);
}

test('consistentHash → RING_HASH with the minimum ring size; http2MaxRequests → max_requests', () => {
  const echo = cluster(`outbound|7070||${ECHO}`);
  assert.equal(at(echo, 'lb_policy'), 'RING_HASH');
  assert.equal(at(echo, 'ring_hash_lb_config.minimum_ring_size.value'), '2048');
  const t = list(echo, 'circuit_breakers.thresholds');
  assert.deepEqual(
    t.map((x) => [at(x, 'priority'), at(x, 'max_requests.value')]),
    [['DEFAULT', 500]],
  );
});

test('what gRPC does not honour is left out: outlier detection, TCP pool, connect timeout', () => {
  const echo = cluster(`outbound|7070||${ECHO}`);
  assert.equal(at(echo, 'outlier_detection'), undefined, 'A50 would turn on success-rate ejection');
  assert.equal(at(echo, 'connect_timeout'), undefined);
  assert.equal(at(echo, 'upstream_connection_options'), undefined);
  assert.equal(
    at(cluster(`outbound|8080||${WEB}`), 'lb_policy'),
    'ROUND_ROBIN',
    'RANDOM is not a gRPC policy',
  );
  const cache = cluster(`outbound|6379||${CACHE}`);
  assert.deepEqual(
    [at(cache, 'type'), at(cache, 'lb_policy')],
    ['EDS', 'ROUND_ROBIN'],
    'PASSTHROUGH has no gRPC form',
  );
  const shop = cluster(`outbound|8080||${SHOP}`);
  assert.equal(at(shop, 'circuit_breakers'), undefined, 'no rule: gRPC’s own defaults');
});

test('subsets: listed in the wildcard, served by name with the merged policy, EDS with their endpoints', () => {
  const names = grpcClusterGenerator.wildcardNames(ctx);
  assert.ok(names.includes(`outbound|7070|v1|${ECHO}`) && names.includes(`outbound|7070|v2|${ECHO}`));
  assert.equal(at(cluster(`outbound|7070|v1|${ECHO}`), 'lb_policy'), 'RING_HASH');
  const v2 = cluster(`outbound|7070|v2|${ECHO}`);
  assert.equal(at(v2, 'lb_policy'), 'ROUND_ROBIN', 'LEAST_REQUEST is served as ROUND_ROBIN');
  assert.equal(at(v2, 'circuit_breakers.thresholds[0].max_requests.value'), 500);
  const eds = grpcEndpointGenerator.build(ctx, `outbound|7070|v1|${ECHO}`) ?? assert.fail();
  const addresses = list(decodeAny(eds.typeUrl, eds.value), 'endpoints')
    .flatMap((l) => list(l, 'lb_endpoints'))
    .map((e) => at(e, 'endpoint.address.socket_address.address'));
  assert.deepEqual(addresses, [VM_IP]);
  const rackA = cluster(`outbound|80|rack-a|${LEGACY}`);
  assert.equal(
    at(rackA, 'load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address'),
    'old-1.dns.internal',
  );
  assert.equal(grpcClusterGenerator.build(ctx, `outbound|7070|v9|${ECHO}`), undefined);
});

test('rules are seen by namespace, so the gRPC CDS cache key is the namespace', () => {
  assert.notEqual(grpcClusterGenerator.viewKey(grpcProxy('a')), grpcClusterGenerator.viewKey(grpcProxy('b')));
  assert.equal(grpcClusterGenerator.viewKey(grpcProxy('a')), grpcClusterGenerator.viewKey(grpcProxy('a')));
});

test('a Sidecar does not restrict what a gRPC client may ask for (documented choice)', () => {
  const scopedCtx = generateContext({ proxy: grpcProxy(SCOPED_NAMESPACE), catalog, config });
  assert.ok(
    grpcClusterGenerator.build(scopedCtx, `outbound|8080||${SHOP}`),
    'SHOP is outside the Sidecar’s egress',
  );
  assert.ok(grpcClusterGenerator.wildcardNames(scopedCtx).includes(`outbound|8080||${SHOP}`));
});

test('limitations: each field gRPC (or Envoy) is not given is listed with resource, path and reason', () => {
  const limits = clusterLimitations(config);
  const find = (resource: string, field: string) =>
    limits.find((l) => l.resource === resource && l.field === field);
  assert.deepEqual(find('DestinationRule/default/echo', 'spec.trafficPolicy.outlierDetection')?.clients, [
    'grpc',
  ]);
  assert.deepEqual(
    find('DestinationRule/default/echo', 'spec.trafficPolicy.connectionPool.tcp.connectTimeout')?.clients,
    ['grpc'],
  );
  assert.equal(
    find('DestinationRule/default/echo', 'spec.trafficPolicy.connectionPool.http.http2MaxRequests'),
    undefined,
    'rendered',
  );
  assert.equal(
    find('DestinationRule/default/echo', 'spec.trafficPolicy.loadBalancer.consistentHash'),
    undefined,
    'rendered',
  );
  assert.match(
    find('DestinationRule/default/echo', 'spec.subsets[1].trafficPolicy.loadBalancer.simple')?.reason ?? '',
    /LEAST_REQUEST/,
  );
  assert.match(
    find('DestinationRule/default/cache', 'spec.trafficPolicy.loadBalancer.simple')?.reason ?? '',
    /original-destination/,
  );
  assert.deepEqual(
    find(
      'DestinationRule/default/web',
      'spec.trafficPolicy.portLevelSettings[0].connectionPool.http.h2UpgradePolicy',
    )?.clients,
    ['grpc'],
  );
  assert.deepEqual(find(`Sidecar/${SCOPED_NAMESPACE}/default`, 'spec.egress')?.clients, ['grpc']);
  const selected = clusterLimitations({
    ...config,
    destinationRules: [
      {
        ...(config.destinationRules[0] ?? assert.fail()),
        spec: { host: ECHO, workloadSelector: { matchLabels: { app: 'a' } } },
      },
    ],
  });
  assert.deepEqual(
    selected.filter((l) => l.resource === 'DestinationRule/default/echo').map((l) => [l.field, l.clients]),
    [['spec.workloadSelector', ['envoy', 'grpc']]],
  );
  assert.ok(
    !limits.some((l) => l.clients.includes('envoy') && l.resource === 'DestinationRule/default/echo'),
    'Envoy gets all of echo’s rule',
  );
});
