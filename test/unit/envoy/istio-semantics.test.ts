// Istio's meaning of forms its published YAML uses, in the generated resources: a Gateway HTTP
// server with `tls.httpsRedirect` is a plain listener whose virtual hosts require TLS (Envoy answers
// 301 to https); several DestinationRules for one host in one namespace merge as Istio merges them
// (subsets unioned, the first subset of a name and the first traffic policy win, each loser listed in
// /debug/configz); mirror percentages as Istio reads them. Every resource passes Envoy's
// validate.rules and each proxy's set the consistency check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type { DestinationRuleSpec, GatewaySpec, HTTPRoute, VirtualServiceSpec } from '../../../mesh/types.js';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { grpcEndpointGenerator } from '../../../xds/generators/grpc/endpoint.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { trafficLimitations } from '../../../xds/traffic/limitations.js';
import { checkConsistency } from '../../../xds/validate/consistency.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { configResource } from '../../support/mesh-fixtures.js';
import { at, list } from './at.js';
import {
  collect,
  decodedByName,
  fixtureCatalog,
  fixtureMeshConfig,
  fixtureProxies,
  INGRESS_LABELS,
  REVIEWS,
  SHOP,
  type Collected,
} from './fixture-mesh.js';

type Obj = Record<string, unknown>;
const catalog = fixtureCatalog();
const proxies = fixtureProxies();
let generation = 5000;

/** The fixture mesh with some of its kinds replaced (a fresh generation: generators memoize by it). */
function meshWith(parts: Partial<MeshConfig>): MeshConfig {
  return { ...fixtureMeshConfig(), ...parts, generation: ++generation };
}

function checked(collected: Collected): Collected {
  for (const [typeUrl, resources] of collected)
    for (const r of resources)
      assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], r.name);
  assert.deepEqual(checkConsistency(collected), []);
  return collected;
}

function get(c: Collected, typeUrl: string, name: string): Obj {
  return decodedByName(c, typeUrl).get(name) ?? assert.fail(`${name} is served`);
}

function virtualHost(route: Obj, domain: string): Obj {
  const vh = list(route, 'virtual_hosts').find((v) => list(v, 'domains').includes(domain));
  return (vh as Obj | undefined) ?? assert.fail(`a virtual host for ${domain}`);
}

// ---- Gateway httpsRedirect ---------------------------------------------------------------------

// As the Istio Gateway reference writes it: an HTTP server whose tls only says httpsRedirect, beside
// the HTTPS server the redirect leads to.
const REDIRECTING_GATEWAY: GatewaySpec = {
  selector: INGRESS_LABELS,
  servers: [
    {
      port: { number: 80, name: 'http', protocol: 'HTTP' },
      hosts: ['shop.example.com', 'default/eu.shop.example.com'],
      tls: { httpsRedirect: true },
    },
    {
      port: { number: 443, name: 'https', protocol: 'HTTPS' },
      hosts: ['shop.example.com'],
      tls: { mode: 'SIMPLE', serverCertificate: '/etc/certs/shop.pem', privateKey: '/etc/certs/shop.key' },
    },
  ],
};

const SHOP_VS: VirtualServiceSpec = {
  hosts: ['shop.example.com'],
  gateways: ['ingress'],
  http: [{ route: [{ destination: { host: SHOP, port: { number: 8080 } } }] }],
};

function redirectingGateway(): Collected {
  const config = meshWith({
    gateways: [configResource('Gateway', 'ingress', REDIRECTING_GATEWAY)],
    virtualServices: [configResource('VirtualService', 'shop', SHOP_VS)],
  });
  return checked(collect(proxies.gateway ?? assert.fail(), catalog, config));
}

test('gateway httpsRedirect: the HTTP server is a plain listener, no TLS socket or SNI match', () => {
  const c = redirectingGateway();
  const listener = get(c, LISTENER, '0.0.0.0_80');
  const chains = list(listener, 'filter_chains');
  assert.equal(chains.length, 1);
  assert.equal(at(chains[0], 'transport_socket'), undefined, 'no TLS on the HTTP port');
  assert.equal(at(chains[0], 'filter_chain_match'), undefined, 'no SNI match on plain HTTP');
  assert.equal(at(listener, 'listener_filters'), undefined, 'no TLS inspector either');
  assert.equal(at(chains[0], 'filters[0].typed_config.rds.route_config_name'), 'http.80');
  // The HTTPS server still terminates TLS with its files.
  const https = list(get(c, LISTENER, '0.0.0.0_443'), 'filter_chains');
  assert.ok(at(https[0], 'transport_socket'), 'the HTTPS server terminates TLS');
});

test('gateway httpsRedirect: every host of the server requires TLS, routed or not', () => {
  const route = get(redirectingGateway(), ROUTE, 'http.80');
  const shop = virtualHost(route, 'shop.example.com');
  assert.equal(at(shop, 'require_tls'), 'ALL');
  assert.equal(at(shop, 'routes[0].route.cluster'), `outbound|8080||${SHOP}`);
  // No VirtualService routes this host: it still redirects (Istio adds a virtual host for it).
  const eu = virtualHost(route, 'eu.shop.example.com');
  assert.equal(at(eu, 'require_tls'), 'ALL');
  assert.deepEqual(list(eu, 'routes'), []);
  // Port 443's route configuration is its own and does not redirect.
  const tls = get(redirectingGateway(), ROUTE, 'http.443');
  assert.equal(at(virtualHost(tls, 'shop.example.com'), 'require_tls'), undefined);
});

test('gateway without httpsRedirect: virtual hosts do not require TLS', () => {
  const c = checked(collect(proxies.gateway ?? assert.fail(), catalog, meshWith({})));
  for (const vh of list(get(c, ROUTE, 'http.80'), 'virtual_hosts'))
    assert.equal(at(vh, 'require_tls'), undefined, String(at(vh, 'name')));
});

// ---- DestinationRule merging ---------------------------------------------------------------------

const dr = (name: string, spec: DestinationRuleSpec, namespace = 'default') =>
  configResource('DestinationRule', name, spec, namespace);

/** Two rules for REVIEWS in one namespace, as teams split them: one per subset, one repeating v1. */
const SPLIT_RULES = [
  dr('reviews-v1', {
    host: REVIEWS,
    trafficPolicy: { loadBalancer: { simple: 'LEAST_REQUEST' } },
    subsets: [{ name: 'v1', labels: { version: 'v1' } }],
  }),
  dr('reviews-v2', {
    host: 'reviews.mesh.internal',
    trafficPolicy: { loadBalancer: { simple: 'RANDOM' } },
    subsets: [
      { name: 'v1', labels: { version: 'nowhere' } },
      { name: 'v2', labels: { version: 'v2' } },
    ],
  }),
];

function clusterNames(c: Collected): string[] {
  return [...decodedByName(c, CLUSTER).keys()];
}

function endpointAddresses(cla: Obj): unknown[] {
  return list(cla, 'endpoints').flatMap((l) =>
    list(l, 'lb_endpoints').map((e) => at(e, 'endpoint.address.socket_address.address')),
  );
}

test('two DestinationRules for one host: subsets unioned, the first v1 and the first policy win (Envoy)', () => {
  const c = checked(
    collect(proxies.transparent ?? assert.fail(), catalog, meshWith({ destinationRules: SPLIT_RULES })),
  );
  const names = clusterNames(c);
  assert.ok(names.includes(`outbound|9080|v1|${REVIEWS}`));
  assert.ok(names.includes(`outbound|9080|v2|${REVIEWS}`), 'the second rule’s subset is not lost');
  // v1 is the first rule's (version v1), not the second's (version nowhere, no endpoints).
  assert.deepEqual(endpointAddresses(get(c, ENDPOINT, `outbound|9080|v1|${REVIEWS}`)), ['10.0.0.11']);
  assert.deepEqual(endpointAddresses(get(c, ENDPOINT, `outbound|9080|v2|${REVIEWS}`)), ['10.0.0.12']);
  for (const name of [`outbound|9080||${REVIEWS}`, `outbound|9080|v2|${REVIEWS}`])
    assert.equal(at(get(c, CLUSTER, name), 'lb_policy'), 'LEAST_REQUEST', name);
});

test('two DestinationRules for one host: proxyless gRPC gets the union too', () => {
  const config = meshWith({ destinationRules: SPLIT_RULES });
  const proxy = proxyFromNode({
    id: 'client',
    user_agent_name: 'gRPC Node',
    metadata: { NAMESPACE: 'default' },
  });
  const ctx = generateContext({ proxy, catalog, config });
  const v2 = `outbound|9080|v2|${REVIEWS}`;
  assert.ok(grpcClusterGenerator.wildcardNames(ctx).includes(v2));
  const cluster = grpcClusterGenerator.build(ctx, v2) ?? assert.fail(`${v2} is served`);
  assert.deepEqual(validateEncoded(cluster.typeUrl.slice(TYPE_URL_PREFIX.length), cluster.value), []);
  const v1 = grpcEndpointGenerator.build(ctx, `outbound|9080|v1|${REVIEWS}`) ?? assert.fail('v1 endpoints');
  assert.deepEqual(endpointAddresses(decodeAny(v1.typeUrl, v1.value)), ['10.0.0.11']);
});

test('what merging leaves out is listed in /debug/configz, against the rule it comes from', () => {
  const limits = trafficLimitations(meshWith({ destinationRules: SPLIT_RULES })).filter(
    (l) => l.resource === 'DestinationRule/default/reviews-v2' && l.reason.startsWith('not applied: '),
  );
  assert.deepEqual(
    limits.map((l) => [l.field, l.clients]),
    [
      ['spec.subsets[0]', ['envoy', 'grpc']],
      ['spec.trafficPolicy', ['envoy', 'grpc']],
    ],
  );
  assert.match(limits[0]?.reason ?? '', /subset v1 of reviews\.mesh\.internal is already defined/);
  assert.match(limits[1]?.reason ?? '', /DestinationRule\/default\/reviews-v1's/);
  // A single rule per host reports nothing of the kind.
  assert.equal(
    trafficLimitations(meshWith({ destinationRules: SPLIT_RULES.slice(0, 1) })).filter((l) =>
      l.reason.startsWith('not applied: subset'),
    ).length,
    0,
  );
});

test('rules of one host with different exportTo are not merged (Istio 1.24+); other namespaces apart', () => {
  const rules = [
    SPLIT_RULES[0] ?? assert.fail(),
    dr('reviews-private', {
      host: REVIEWS,
      exportTo: ['.'],
      subsets: [{ name: 'v2', labels: { version: 'v2' } }],
    }),
    dr('reviews-elsewhere', { host: REVIEWS, subsets: [{ name: 'v3', labels: { version: 'v3' } }] }, 'other'),
  ];
  const names = clusterNames(
    checked(
      collect(
        proxies.transparent ?? assert.fail(),
        catalog,
        meshWith({ destinationRules: rules, virtualServices: [] }),
      ),
    ),
  );
  assert.ok(names.includes(`outbound|9080|v1|${REVIEWS}`));
  assert.ok(!names.includes(`outbound|9080|v2|${REVIEWS}`), 'a rule with another exportTo stays apart');
  assert.ok(!names.includes(`outbound|9080|v3|${REVIEWS}`), 'a rule of another namespace stays apart');
});

// ---- Mirroring -------------------------------------------------------------------------------------

function mirrorRoutes(http: HTTPRoute[]): Obj[] {
  const config = meshWith({
    virtualServices: [configResource('VirtualService', 'reviews', { hosts: [REVIEWS], http })],
  });
  const c = checked(collect(proxies.transparent ?? assert.fail(), catalog, config));
  return list(virtualHost(get(c, ROUTE, '9080'), REVIEWS), 'routes') as Obj[];
}

const TO_V1 = { route: [{ destination: { host: REVIEWS, subset: 'v1' } }] };
const V2 = { host: REVIEWS, subset: 'v2' };

test('mirror percentages as Istio reads them: mirrorPercentage over mirrorPercent, 100 % by default, 0 % none', () => {
  const routes = mirrorRoutes([
    { ...TO_V1, match: [{ uri: { prefix: '/a' } }], mirror: V2 },
    { ...TO_V1, match: [{ uri: { prefix: '/b' } }], mirror: V2, mirrorPercent: 25 },
    {
      ...TO_V1,
      match: [{ uri: { prefix: '/c' } }],
      mirror: V2,
      mirrorPercent: 50,
      mirrorPercentage: { value: 10.5 },
    },
    { ...TO_V1, match: [{ uri: { prefix: '/d' } }], mirror: V2, mirrorPercentage: { value: 0 } },
    { ...TO_V1, match: [{ uri: { prefix: '/e' } }], mirror: V2, mirrorPercent: 0 },
    {
      ...TO_V1,
      match: [{ uri: { prefix: '/f' } }],
      mirrors: [
        { destination: V2, percentage: { value: 0 } },
        { destination: { host: SHOP, port: { number: 8080 } } },
      ],
    },
  ]);
  const policies = routes.map((r) =>
    list(r, 'route.request_mirror_policies').map((p) => [
      at(p, 'cluster'),
      at(p, 'runtime_fraction.default_value.numerator'),
      at(p, 'runtime_fraction.default_value.denominator'),
    ]),
  );
  const v2 = `outbound|9080|v2|${REVIEWS}`;
  assert.deepEqual(policies.slice(0, 6), [
    [[v2, 1_000_000, 'MILLION']],
    [[v2, 250_000, 'MILLION']],
    [[v2, 105_000, 'MILLION']],
    [],
    [],
    [[`outbound|8080||${SHOP}`, 1_000_000, 'MILLION']],
  ]);
});

test('proxyless gRPC: every mirror field is listed as not applied', () => {
  const config = meshWith({
    virtualServices: [
      configResource('VirtualService', 'reviews', {
        hosts: [REVIEWS],
        http: [{ ...TO_V1, mirror: V2, mirrorPercent: 25 }],
      }),
    ],
  });
  const fields = trafficLimitations(config)
    .filter((l) => l.resource === 'VirtualService/default/reviews')
    .map((l) => [l.field, l.clients]);
  assert.deepEqual(fields, [
    ['spec.http[0].mirror', ['grpc']],
    ['spec.http[0].mirrorPercent', ['grpc']],
  ]);
});

// ---- Namespace-wide rules ------------------------------------------------------------------------

test('wildcard DestinationRules: the root namespace’s `*` applies mesh-wide, the proxy’s namespace first', () => {
  const lb = (rules: DestinationRuleSpec[], namespaces: string[]): unknown => {
    const destinationRules = rules.map((spec, i) => dr(`rule-${i}`, spec, namespaces[i]));
    const c = collect(
      proxies.transparent ?? assert.fail(),
      catalog,
      meshWith({ destinationRules, virtualServices: [] }),
    );
    return at(get(c, CLUSTER, `outbound|9080||${REVIEWS}`), 'lb_policy');
  };
  const leastRequest: DestinationRuleSpec = {
    host: '*',
    trafficPolicy: { loadBalancer: { simple: 'LEAST_REQUEST' } },
  };
  assert.equal(lb([leastRequest], ['istio-system']), 'LEAST_REQUEST', 'a root `*` rule reaches every proxy');
  assert.equal(
    lb([leastRequest], ['elsewhere']),
    'ROUND_ROBIN',
    'a `*` rule elsewhere reaches only its own proxies',
  );
  // The proxy's namespace wins even with a wildcard over an exact rule of the root namespace.
  const random: DestinationRuleSpec = {
    host: '*.mesh.internal',
    trafficPolicy: { loadBalancer: { simple: 'RANDOM' } },
  };
  assert.equal(lb([{ ...leastRequest, host: REVIEWS }, random], ['istio-system', 'default']), 'RANDOM');
  // Within one namespace the exact host beats the wildcard, whatever the order.
  assert.equal(lb([random, { ...leastRequest, host: REVIEWS }], ['default', 'default']), 'LEAST_REQUEST');
});
