// The VirtualService → routes translator, field by field, for Envoy and for proxyless gRPC: which
// match goes to which cluster, with which timeout, retry policy, fault, mirror, rewrite and headers;
// what gRPC leaves out; and every route configuration passing Envoy's (validate.rules).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import type {
  DestinationRuleResource,
  DestinationRuleSpec,
  HTTPRoute,
  VirtualServiceResource,
  VirtualServiceSpec,
} from '../../../mesh/types.js';
import type { Route } from '../../../xds/generated/envoy/config/route/v3/Route.js';
import { buildCatalog } from '../../../model/catalog.js';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { grpcListenerGenerator } from '../../../xds/generators/grpc/listener.js';
import { grpcRouteGenerator } from '../../../xds/generators/grpc/route.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { encodeResource } from '../../../xds/proto/resource.js';
import { MeshIndex } from '../../../mesh/mesh-index.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { routesForHost, virtualServiceRoutes } from '../../../xds/traffic/http-routes.js';
import {
  proxyLabels,
  routeViewKey,
  type RouteClient,
  type RouteContext,
} from '../../../xds/traffic/route-context.js';
import { routeLimitations } from '../../../xds/traffic/route-limitations.js';
import { tcpTargetForHost } from '../../../xds/traffic/tcp-routes.js';
import { CLUSTER, LISTENER, ROUTE, TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';

const REVIEWS = 'reviews.shop.svc.cluster.local';
const RATINGS = 'ratings.shop.svc.cluster.local';

const catalog = buildCatalog(
  [
    service(REVIEWS, [servicePort('http', 9080, 'HTTP')], { namespace: 'shop' }),
    service(RATINGS, [servicePort('http', 9080, 'HTTP'), servicePort('grpc', 7070, 'GRPC')], {
      namespace: 'shop',
    }),
  ],
  new Map([
    [
      REVIEWS,
      [
        endpoint('10.0.0.1', { http: 9080 }, { labels: { version: 'v1' } }),
        endpoint('10.0.0.2', { http: 9080 }, { labels: { version: 'v2' } }),
      ],
    ],
    [RATINGS, [endpoint('10.0.0.3', { http: 9080, grpc: 7070 })]],
  ]),
);

function envelope<K extends string, T>(kind: K, name: string, namespace: string, spec: T) {
  const r = { kind, apiVersion: 'networking.istio.io/v1', name, namespace, labels: {}, annotations: {} };
  return { ...r, spec, file: `${name}.yaml`, line: 1 };
}
function vs(spec: VirtualServiceSpec, name = 'reviews', namespace = 'shop'): VirtualServiceResource {
  return envelope('VirtualService', name, namespace, spec);
}
function dr(spec: DestinationRuleSpec, name = 'reviews', namespace = 'shop'): DestinationRuleResource {
  return envelope('DestinationRule', name, namespace, spec);
}
/** The subsets the routes below send to: a route to an undefined subset goes to BlackHoleCluster. */
const REVIEWS_SUBSETS = dr({
  host: 'reviews',
  subsets: [
    { name: 'v1', labels: { version: 'v1' } },
    { name: 'v2', labels: { version: 'v2' } },
  ],
});
function mesh(parts: Partial<MeshConfig>): MeshConfig {
  return { ...EMPTY_MESH_CONFIG, generation: 1, destinationRules: [REVIEWS_SUBSETS], ...parts };
}
function ctx(client: RouteClient, config: MeshConfig, over: Partial<RouteContext> = {}): RouteContext {
  return {
    client,
    index: new MeshIndex(config),
    catalog,
    proxyNamespace: 'shop',
    proxyLabels: {},
    gateway: 'mesh',
    port: 9080,
    ...over,
  };
}
/** The routes of one http route of a VirtualService for `reviews`. */
function render(http: HTTPRoute[], client: RouteClient, over: Partial<RouteContext> = {}): Route[] {
  const service = vs({ hosts: ['reviews'], http });
  return virtualServiceRoutes(service, ctx(client, mesh({ virtualServices: [service] }), over));
}
const route = (http: HTTPRoute): HTTPRoute => http;
const toReviews = [{ destination: { host: 'reviews' } }];

/** A route configuration with these routes passes Envoy's validation rules. */
function assertValid(routes: Route[]): void {
  const config = { name: 'r', virtual_hosts: [{ name: 'vh', domains: ['*'], routes }] };
  const encoded = encodeResource(ROUTE, 'r', config);
  assert.deepEqual(validateEncoded(ROUTE.slice(TYPE_URL_PREFIX.length), encoded.value), []);
}

function faultOf(r: Route | undefined): Record<string, unknown> {
  const any = r?.typed_per_filter_config?.['envoy.filters.http.fault'] as
    { type_url: string; value: Uint8Array } | undefined;
  assert.ok(any, 'route has a fault config');
  return decodeAny(any.type_url, any.value);
}

for (const client of ['envoy', 'grpc'] as const) {
  test(`${client}: weights split across subset clusters outbound|PORT|SUBSET|HOST`, () => {
    const routes = render(
      [
        {
          route: [
            { destination: { host: 'reviews', subset: 'v1' }, weight: 80 },
            { destination: { host: 'reviews', subset: 'v2' }, weight: 20 },
          ],
        },
      ],
      client,
    );
    assert.equal(routes.length, 1);
    assert.deepEqual(routes[0]?.match, { prefix: '/' });
    assert.deepEqual(routes[0]?.route?.weighted_clusters?.clusters, [
      { name: `outbound|9080|v1|${REVIEWS}`, weight: { value: 80 } },
      { name: `outbound|9080|v2|${REVIEWS}`, weight: { value: 20 } },
    ]);
    assertValid(routes);
  });

  test(`${client}: a destination with weight 0 is left out; one left is a plain cluster`, () => {
    const routes = render(
      [
        {
          route: [
            { destination: { host: 'reviews', subset: 'v1' }, weight: 100 },
            { destination: { host: 'reviews', subset: 'v2' }, weight: 0 },
          ],
        },
      ],
      client,
    );
    assert.equal(routes[0]?.route?.cluster, `outbound|9080|v1|${REVIEWS}`);
    assert.equal(routes[0]?.route?.weighted_clusters, undefined);
  });

  test(`${client}: each match entry is its own route, in order, with the same action`, () => {
    const routes = render(
      [
        route({
          match: [{ uri: { exact: '/a' } }, { uri: { prefix: '/b' } }, { uri: { regex: '/c/[0-9]+' } }],
          route: [{ destination: { host: 'reviews', subset: 'v2' } }],
        }),
        route({ route: toReviews }),
      ],
      client,
    );
    assert.deepEqual(
      routes.map((r) => [r.match, r.route?.cluster]),
      [
        [{ path: '/a' }, `outbound|9080|v2|${REVIEWS}`],
        [{ prefix: '/b' }, `outbound|9080|v2|${REVIEWS}`],
        [{ safe_regex: { regex: '/c/[0-9]+' } }, `outbound|9080|v2|${REVIEWS}`],
        [{ prefix: '/' }, `outbound|9080||${REVIEWS}`],
      ],
    );
    assertValid(routes);
  });

  test(`${client}: sourceLabels, port, sourceNamespace and gateways drop a match for proxies they exclude`, () => {
    const http = [
      route({
        match: [{ sourceLabels: { app: 'canary' } }],
        route: [{ destination: { host: 'reviews', subset: 'v2' } }],
      }),
      route({ match: [{ port: 7070 }], route: [{ destination: { host: 'ratings' } }] }),
      route({ match: [{ sourceNamespace: 'other' }], route: [{ destination: { host: 'ratings' } }] }),
      route({ match: [{ gateways: ['shop/ingress'] }], route: [{ destination: { host: 'ratings' } }] }),
      route({ route: toReviews }),
    ];
    const plain = render(http, client);
    assert.deepEqual(
      plain.map((r) => r.route?.cluster),
      [`outbound|9080||${REVIEWS}`],
    );
    const canary = render(http, client, { proxyLabels: { app: 'canary', extra: 'x' } });
    assert.deepEqual(
      canary.map((r) => r.route?.cluster),
      [`outbound|9080|v2|${REVIEWS}`, `outbound|9080||${REVIEWS}`],
    );
    // On port 7070 from namespace `other`: the port and sourceNamespace matches apply. ratings has two
    // ports, so an unported destination keeps the incoming one; reviews has one, so it keeps 9080.
    const other = render(http, client, { port: 7070, proxyNamespace: 'other' });
    assert.deepEqual(
      other.map((r) => r.route?.cluster),
      [`outbound|7070||${RATINGS}`, `outbound|7070||${RATINGS}`, `outbound|9080||${REVIEWS}`],
    );
  });

  test(`${client}: a fault aborts and delays with percentages in millionths`, () => {
    const routes = render(
      [
        route({
          fault: {
            abort: { grpcStatus: 'UNAVAILABLE', percentage: { value: 12.5 } },
            delay: { fixedDelay: '1.5s' },
          },
          route: toReviews,
        }),
      ],
      client,
    );
    const fault = faultOf(routes[0]);
    assert.deepEqual(fault.abort, {
      grpc_status: 14,
      percentage: { numerator: 125000, denominator: 'MILLION' },
    });
    assert.deepEqual(fault.delay, {
      fixed_delay: { seconds: '1', nanos: 500000000 },
      percentage: { numerator: 1000000, denominator: 'MILLION' },
    });
    assertValid(routes);
  });

  test(`${client}: DestinationRule consistentHash by header becomes the route's hash policy`, () => {
    const service = vs({ hosts: ['reviews'], http: [{ route: toReviews }] });
    const rule = dr({
      host: 'reviews',
      trafficPolicy: { loadBalancer: { consistentHash: { httpHeaderName: 'X-User' } } },
    });
    const config = mesh({ virtualServices: [service], destinationRules: [rule] });
    assert.deepEqual(virtualServiceRoutes(service, ctx(client, config))[0]?.route?.hash_policy, [
      { header: { header_name: 'x-user' } },
    ]);
    // Without a VirtualService, the default route hashes too.
    const defaults = routesForHost(ctx(client, mesh({ destinationRules: [rule] })), REVIEWS);
    assert.deepEqual(defaults[0]?.route?.hash_policy, [{ header: { header_name: 'x-user' } }]);
  });
}

test('envoy: uri, header (exact/prefix/regex/present/absent), method, query and case matches', () => {
  const routes = render(
    [
      route({
        match: [
          {
            uri: { prefix: '/api' },
            ignoreUriCase: true,
            headers: {
              'X-Env': { exact: 'prod' },
              'x-ver': { prefix: 'v2' },
              'x-id': { regex: '[a-f]+' },
              'x-on': {},
            },
            withoutHeaders: { 'x-debug': {} },
            method: { exact: 'GET' },
            queryParams: { q: { exact: '1' }, r: {} },
          },
        ],
        route: toReviews,
      }),
    ],
    'envoy',
  );
  assert.deepEqual(routes[0]?.match, {
    prefix: '/api',
    case_sensitive: { value: false },
    headers: [
      { name: 'x-env', string_match: { exact: 'prod' } },
      { name: 'x-ver', string_match: { prefix: 'v2' } },
      { name: 'x-id', string_match: { safe_regex: { regex: '[a-f]+' } } },
      { name: 'x-on', present_match: true },
      { name: 'x-debug', invert_match: true, present_match: true },
      { name: ':method', string_match: { exact: 'GET' } },
    ],
    query_parameters: [
      { name: 'q', string_match: { exact: '1' } },
      { name: 'r', present_match: true },
    ],
  });
  assertValid(routes);
});

test('grpc: headers use gRFC A28 matchers; method is decided against POST; query, scheme, authority never match', () => {
  const routes = render(
    [
      route({
        match: [
          {
            headers: {
              'x-env': { exact: 'prod' },
              'x-ver': { prefix: 'v2' },
              'x-id': { regex: '[a-f]+' },
              'x-on': {},
            },
          },
          { method: { exact: 'POST' }, uri: { prefix: '/pkg.Svc/' } },
          { method: { exact: 'GET' } },
          { queryParams: { q: {} } },
          { authority: { exact: 'x' } },
        ],
        route: toReviews,
      }),
    ],
    'grpc',
  );
  assert.deepEqual(
    routes.map((r) => r.match),
    [
      {
        prefix: '/',
        headers: [
          { name: 'x-env', exact_match: 'prod' },
          { name: 'x-ver', prefix_match: 'v2' },
          { name: 'x-id', safe_regex_match: { regex: '[a-f]+' } },
          { name: 'x-on', present_match: true },
        ],
      },
      { prefix: '/pkg.Svc/' },
    ],
  );
});

test('envoy: timeout (0s when unset, as Istio), retries with status codes, mirror, rewrite, headers', () => {
  const [withAll] = render(
    [
      route({
        timeout: '3s',
        retries: { attempts: 7, perTryTimeout: '250ms', retryOn: 'gateway-error,503,unavailable' },
        mirror: { host: 'ratings' },
        mirrorPercentage: { value: 5 },
        rewrite: { uri: '/v2', authority: 'reviews-v2' },
        headers: {
          request: { set: { 'X-A': '1' }, add: { 'x-b': '2' }, remove: ['x-c'] },
          response: { set: { 'x-d': '4' }, remove: ['x-e'] },
        },
        route: toReviews,
      }),
    ],
    'envoy',
  );
  assert.deepEqual(withAll?.route?.timeout, { seconds: '3', nanos: 0 });
  assert.deepEqual(withAll?.route?.retry_policy, {
    retry_on: 'gateway-error,unavailable,retriable-status-codes',
    num_retries: { value: 7 },
    per_try_timeout: { seconds: '0', nanos: 250000000 },
    retriable_status_codes: [503],
  });
  assert.deepEqual(withAll?.route?.request_mirror_policies, [
    {
      cluster: `outbound|9080||${RATINGS}`,
      runtime_fraction: { default_value: { numerator: 50000, denominator: 'MILLION' } },
    },
  ]);
  assert.equal(withAll?.route?.prefix_rewrite, '/v2');
  assert.equal(withAll?.route?.host_rewrite_literal, 'reviews-v2');
  assert.deepEqual(withAll?.request_headers_to_add, [
    { header: { key: 'x-a', value: '1' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
    { header: { key: 'x-b', value: '2' }, append_action: 'APPEND_IF_EXISTS_OR_ADD' },
  ]);
  assert.deepEqual(withAll?.request_headers_to_remove, ['x-c']);
  assert.deepEqual(withAll?.response_headers_to_add, [
    { header: { key: 'x-d', value: '4' }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' },
  ]);
  assert.deepEqual(withAll?.response_headers_to_remove, ['x-e']);
  const [plain] = render([route({ route: toReviews })], 'envoy');
  assert.deepEqual(plain?.route?.timeout, { seconds: '0', nanos: 0 });
  assert.equal(plain?.route?.retry_policy, undefined);
  assertValid([withAll ?? assert.fail(), plain ?? assert.fail()]);
});

test('grpc: timeout as max_stream_duration (A31); retries as gRPC codes, at most 4 retries (A44); no HTTP-only parts', () => {
  const [r] = render(
    [
      route({
        timeout: '3s',
        retries: { attempts: 7, perTryTimeout: '250ms', retryOn: '5xx,unavailable,cancelled,503' },
        mirror: { host: 'ratings' },
        rewrite: { uri: '/v2' },
        headers: { request: { set: { 'x-a': '1' } } },
        route: toReviews,
      }),
    ],
    'grpc',
  );
  assert.deepEqual(r?.route, {
    cluster: `outbound|9080||${REVIEWS}`,
    retry_policy: { retry_on: 'unavailable,cancelled', num_retries: { value: 4 } },
    max_stream_duration: {
      max_stream_duration: { seconds: '3', nanos: 0 },
      grpc_timeout_header_max: { seconds: '3', nanos: 0 },
    },
  });
  assert.equal(r?.request_headers_to_add, undefined);
  // Only HTTP conditions: nothing a gRPC client could retry on, so no policy at all.
  const [httpOnly] = render(
    [route({ retries: { attempts: 2, retryOn: '5xx,reset' }, route: toReviews })],
    'grpc',
  );
  assert.equal(httpOnly?.route?.retry_policy, undefined);
  // Istio's default retryOn keeps its gRPC conditions.
  const [defaults] = render([route({ retries: { attempts: 2 }, route: toReviews })], 'grpc');
  assert.deepEqual(defaults?.route?.retry_policy, {
    retry_on: 'unavailable,cancelled',
    num_retries: { value: 2 },
  });
});

test('envoy renders redirects and direct responses; gRPC leaves those routes out', () => {
  const http = [
    route({
      match: [{ uri: { prefix: '/old' } }],
      redirect: { uri: '/new', authority: 'b', redirectCode: 302, scheme: 'https', port: 8443 },
    }),
    route({
      match: [{ uri: { prefix: '/gone' } }],
      directResponse: { status: 410, body: { string: 'gone' } },
    }),
    route({ route: toReviews }),
  ];
  const envoy = render(http, 'envoy');
  assert.deepEqual(envoy[0]?.redirect, {
    path_redirect: '/new',
    host_redirect: 'b',
    scheme_redirect: 'https',
    port_redirect: 8443,
    response_code: 'FOUND',
  });
  assert.deepEqual(envoy[1]?.direct_response, { status: 410, body: { inline_string: 'gone' } });
  assertValid(envoy);
  assert.deepEqual(
    render(http, 'grpc').map((r) => r.route?.cluster),
    [`outbound|9080||${REVIEWS}`],
  );
});

test('hosts: short names resolve in the VirtualService namespace; exportTo hides it; no VirtualService keeps the default route', () => {
  const service = vs({
    hosts: ['reviews'],
    exportTo: ['.'],
    http: [{ route: [{ destination: { host: 'reviews', subset: 'v1' } }] }],
  });
  const config = mesh({ virtualServices: [service] });
  assert.equal(routesForHost(ctx('grpc', config), REVIEWS)[0]?.route?.cluster, `outbound|9080|v1|${REVIEWS}`);
  // From another namespace the VirtualService is invisible: today's default route.
  assert.deepEqual(routesForHost(ctx('grpc', config, { proxyNamespace: 'web' }), REVIEWS), [
    { match: { prefix: '/' }, route: { cluster: `outbound|9080||${REVIEWS}` } },
  ]);
  assert.deepEqual(routesForHost(ctx('envoy', config), RATINGS), [
    { name: 'default', match: { prefix: '/' }, route: { cluster: `outbound|9080||${RATINGS}` } },
  ]);
  // A wildcard host covers every service it matches.
  const wild = vs(
    {
      hosts: ['*.shop.svc.cluster.local'],
      http: [{ route: [{ destination: { host: 'reviews', subset: 'v2' } }] }],
    },
    'all',
  );
  assert.equal(
    routesForHost(ctx('envoy', mesh({ virtualServices: [wild] })), RATINGS)[0]?.route?.cluster,
    `outbound|9080|v2|${REVIEWS}`,
  );
});

test('a VirtualService bound to a named gateway does not route the mesh, and routes that gateway', () => {
  const gw = vs({
    hosts: ['reviews'],
    gateways: ['ingress'],
    http: [{ route: [{ destination: { host: 'reviews', subset: 'v2' } }] }],
  });
  const config = mesh({ virtualServices: [gw] });
  assert.equal(routesForHost(ctx('envoy', config), REVIEWS)[0]?.route?.cluster, `outbound|9080||${REVIEWS}`);
  assert.equal(
    routesForHost(ctx('envoy', config, { gateway: 'shop/ingress' }), REVIEWS)[0]?.route?.cluster,
    `outbound|9080|v2|${REVIEWS}`,
  );
});

test('match.gateways: a bare name is a gateway in the VirtualService namespace', () => {
  const http = [
    route({
      match: [{ gateways: ['ingress'] }],
      route: [{ destination: { host: 'reviews', subset: 'v2' } }],
    }),
    route({ route: toReviews }),
  ];
  const clusters = (gateway: string): (string | undefined)[] =>
    render(http, 'envoy', { gateway }).map((r) => r.route?.cluster);
  assert.deepEqual(clusters('shop/ingress'), [`outbound|9080|v2|${REVIEWS}`, `outbound|9080||${REVIEWS}`]);
  assert.deepEqual(clusters('other/ingress'), [`outbound|9080||${REVIEWS}`]);
  assert.deepEqual(clusters('mesh'), [`outbound|9080||${REVIEWS}`]);
});

test('envoy tcp: the first applicable tcp route splits connections by weight', () => {
  const service = vs({
    hosts: ['ratings'],
    tcp: [
      { match: [{ port: 1234 }], route: [{ destination: { host: 'reviews' } }] },
      {
        route: [
          { destination: { host: 'ratings', port: { number: 7070 } }, weight: 60 },
          { destination: { host: 'ratings', subset: 'v2', port: { number: 7070 } }, weight: 40 },
        ],
      },
    ],
  });
  const ratingsV2 = dr({ host: 'ratings', subsets: [{ name: 'v2', labels: { version: 'v2' } }] }, 'ratings');
  const config = mesh({ virtualServices: [service], destinationRules: [ratingsV2] });
  assert.deepEqual(tcpTargetForHost(ctx('envoy', config, { port: 7070 }), RATINGS), {
    weighted_clusters: {
      clusters: [
        { name: `outbound|7070||${RATINGS}`, weight: 60 },
        { name: `outbound|7070|v2|${RATINGS}`, weight: 40 },
      ],
    },
  });
  assert.deepEqual(tcpTargetForHost(ctx('envoy', config, { port: 1234 }), RATINGS), {
    cluster: `outbound|9080||${REVIEWS}`,
  });
  assert.deepEqual(tcpTargetForHost(ctx('envoy', mesh({}), { port: 7070 }), RATINGS), {
    cluster: `outbound|7070||${RATINGS}`,
  });
});

test('limitations list, per resource and field, what gRPC (or both) cannot render', () => {
  const service = vs({
    hosts: ['reviews'],
    http: [
      {
        match: [{ queryParams: { q: {} } }],
        mirror: { host: 'ratings' },
        retries: { attempts: 9, perTryTimeout: '1s', retryOn: '5xx,unavailable' },
        route: toReviews,
      },
    ],
    tcp: [{ route: toReviews }],
  });
  const rule = dr({
    host: 'reviews',
    trafficPolicy: { loadBalancer: { consistentHash: { httpCookie: { name: 'c' } } } },
  });
  const found = routeLimitations(mesh({ virtualServices: [service], destinationRules: [rule] })).map((l) => [
    l.resource,
    l.field,
    l.clients.join(','),
  ]);
  assert.deepEqual(found, [
    ['VirtualService/shop/reviews', 'spec.http[0].match[0].queryParams', 'grpc'],
    ['VirtualService/shop/reviews', 'spec.http[0].mirror', 'grpc'],
    ['VirtualService/shop/reviews', 'spec.http[0].retries.perTryTimeout', 'grpc'],
    ['VirtualService/shop/reviews', 'spec.http[0].retries.attempts', 'grpc'],
    ['VirtualService/shop/reviews', 'spec.http[0].retries.retryOn', 'grpc'],
    ['VirtualService/shop/reviews', 'spec.tcp[0]', 'grpc'],
    ['DestinationRule/shop/reviews', 'spec.trafficPolicy.loadBalancer.consistentHash.httpCookie', 'grpc'],
  ]);
});

// The gRPC generators end to end at the resource level: RDS from the VirtualService, the fault filter
// in LDS only while some VirtualService injects faults, and CDS for a subset the client's namespace sees.
test('grpc generators: RDS follows the VirtualService; LDS gains the fault filter; CDS serves defined subsets', () => {
  const service = vs({
    hosts: ['reviews'],
    http: [
      { fault: { abort: { httpStatus: 503 } }, route: [{ destination: { host: 'reviews', subset: 'v2' } }] },
    ],
  });
  const rule = dr({ host: 'reviews', subsets: [{ name: 'v2', labels: { version: 'v2' } }] });
  const config = mesh({ virtualServices: [service], destinationRules: [rule] });
  const proxy = proxyFromNode({ id: 'c1', user_agent_name: 'gRPC Node', metadata: { NAMESPACE: 'shop' } });
  const gen = generateContext({ proxy, catalog, config });
  const rds = grpcRouteGenerator.build(gen, `${REVIEWS}:9080`) ?? assert.fail('rds');
  const decoded = decodeAny(rds.typeUrl, rds.value) as {
    virtual_hosts: { routes: { route: { cluster: string } }[] }[];
  };
  assert.equal(decoded.virtual_hosts[0]?.routes[0]?.route.cluster, `outbound|9080|v2|${REVIEWS}`);
  const filters = (config_: MeshConfig): string[] => {
    const lds =
      grpcListenerGenerator.build(generateContext({ proxy, catalog, config: config_ }), `${REVIEWS}:9080`) ??
      assert.fail('lds');
    const listener = decodeAny(lds.typeUrl, lds.value) as {
      api_listener: { api_listener: { http_filters: { name: string }[] } };
    };
    return listener.api_listener.api_listener.http_filters.map((f) => f.name);
  };
  assert.deepEqual(filters(config), ['envoy.filters.http.fault', 'envoy.filters.http.router']);
  assert.deepEqual(filters(mesh({})), ['envoy.filters.http.router']);
  const cds = grpcClusterGenerator.build(gen, `outbound|9080|v2|${REVIEWS}`) ?? assert.fail('cds');
  assert.deepEqual(decodeAny(cds.typeUrl, cds.value).eds_cluster_config, {
    service_name: `outbound|9080|v2|${REVIEWS}`,
    eds_config: { ads: {}, resource_api_version: 'V3' },
  });
  assert.equal(grpcClusterGenerator.build(gen, `outbound|9080|v9|${REVIEWS}`), undefined, 'undefined subset');
  const elsewhere = {
    ...gen,
    proxy: proxyFromNode({ id: 'c2', user_agent_name: 'gRPC Node', metadata: { NAMESPACE: 'web' } }),
  };
  assert.ok(
    grpcClusterGenerator.build(elsewhere, `outbound|9080|v2|${REVIEWS}`),
    'the rule is exported everywhere',
  );
  for (const [typeUrl, r] of [
    [ROUTE, rds],
    [CLUSTER, cds],
    [LISTENER, grpcListenerGenerator.build(gen, `${REVIEWS}:9080`) ?? assert.fail()],
  ] as const)
    assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), []);
});

test('a gRPC client is matched on the LABELS of its node metadata; routes are cached per namespace and labels', () => {
  const node = (labels: unknown) =>
    proxyFromNode({ id: 'c', user_agent_name: 'gRPC Node', metadata: { NAMESPACE: 'shop', LABELS: labels } });
  assert.deepEqual(proxyLabels(node({ app: 'canary', n: 3 })), { app: 'canary' });
  assert.deepEqual(proxyLabels(node('app=canary')), {});
  assert.notEqual(routeViewKey(node({ app: 'canary' })), routeViewKey(node({ app: 'stable' })));
  const service = vs({
    hosts: ['reviews'],
    http: [
      {
        match: [{ sourceLabels: { app: 'canary' } }],
        route: [{ destination: { host: 'reviews', subset: 'v2' } }],
      },
      { route: toReviews },
    ],
  });
  const gen = (labels: unknown) =>
    generateContext({
      proxy: node(labels),
      catalog,
      config: mesh({ virtualServices: [service] }),
    });
  const first = (labels: unknown): unknown => {
    const rds = grpcRouteGenerator.build(gen(labels), `${REVIEWS}:9080`) ?? assert.fail('rds');
    const decoded = decodeAny(rds.typeUrl, rds.value) as {
      virtual_hosts: { routes: { route: { cluster: string } }[] }[];
    };
    return decoded.virtual_hosts[0]?.routes[0]?.route.cluster;
  };
  assert.equal(first({ app: 'canary' }), `outbound|9080|v2|${REVIEWS}`);
  assert.equal(first({ app: 'stable' }), `outbound|9080||${REVIEWS}`);
});
