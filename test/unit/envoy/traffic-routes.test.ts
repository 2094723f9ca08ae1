// VirtualServices in the Envoy generators: the sidecar's per-port RDS, the http_proxy route, the
// explicit upstreams' inline routes and the tcp_proxy listeners all follow the fixture's
// VirtualServices; outbound HTTP connection managers carry the fault filter before the router.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { at, list } from './at.js';
import {
  collect,
  DB,
  decodedByName,
  fixtureCatalog,
  fixtureProxies,
  LEDGER,
  REVIEWS,
  SHOP,
  type Collected,
} from './fixture-mesh.js';

type Obj = Record<string, unknown>;
const catalog = fixtureCatalog();
const proxies = fixtureProxies();
const of = (name: keyof ReturnType<typeof fixtureProxies>): Collected =>
  collect(proxies[name] ?? assert.fail(`no proxy ${name}`), catalog);

function get(c: Collected, typeUrl: string, name: string): Obj {
  return decodedByName(c, typeUrl).get(name) ?? assert.fail(`${name} is served`);
}

function hostRoutes(route: unknown, domain: string): unknown[] {
  const vh = list(route, 'virtual_hosts').find((v) => list(v, 'domains').includes(domain));
  return list(vh, 'routes');
}

/** What the REVIEWS VirtualService must look like wherever it is rendered. */
function assertReviewsRoutes(routes: unknown[]): void {
  assert.deepEqual(
    routes.map((r) => at(r, 'name')),
    [
      'canary.by-header',
      'canary.by-query',
      'canary.by-regex',
      'canary.without',
      'default/reviews/http[1]',
      'default/reviews/http[2]',
      'default/reviews/http[3]',
      'default/reviews/http[4]',
      'default/reviews/http[5]',
    ],
  );
  const [canary, , , , redirect, gone, grpcFault, , last] = routes;
  assert.deepEqual(
    list(canary, 'route.weighted_clusters.clusters').map((w) => [at(w, 'name'), at(w, 'weight.value')]),
    [
      [`outbound|9080|v1|${REVIEWS}`, 90],
      [`outbound|8080||${SHOP}`, 10],
    ],
  );
  assert.equal(at(canary, 'route.request_mirror_policies[0].cluster'), `outbound|9080|v2|${REVIEWS}`);
  assert.equal(at(grpcFault, 'route.cluster'), `outbound|9080|v2|${REVIEWS}`);
  assert.equal(at(canary, 'route.retry_policy.num_retries.value'), 3);
  // Its destinations' DestinationRules hash differently (cookie vs header): no hash policy.
  assert.equal(at(canary, 'route.hash_policy'), undefined);
  assert.equal(at(redirect, 'redirect.response_code'), 'PERMANENT_REDIRECT');
  assert.equal(at(gone, 'direct_response.status'), 410);
  const fault = (at(canary, 'typed_per_filter_config') as Obj)['envoy.filters.http.fault'];
  assert.equal(at(fault, 'abort.http_status'), 503);
  const grpcAbort = (at(grpcFault, 'typed_per_filter_config') as Obj)['envoy.filters.http.fault'];
  assert.equal(at(grpcAbort, 'abort.grpc_status'), 14);
  // The DestinationRule's cookie hash applies where every destination is REVIEWS.
  assert.equal(at(last, 'route.cluster'), `outbound|9080||${REVIEWS}`);
  assert.equal(at(last, 'route.hash_policy[0].cookie.name'), 'user');
}

test('sidecar RDS per port: the VirtualService routes its host, in order; other hosts keep the default', () => {
  const c = of('transparent');
  const route = get(c, ROUTE, '9080');
  assertReviewsRoutes(hostRoutes(route, REVIEWS));
  // SHOP has no VirtualService: the default route, hashed by the DestinationRule's header.
  const shop = hostRoutes(get(c, ROUTE, '8080'), SHOP);
  assert.deepEqual(at(shop[0], 'route'), {
    cluster: `outbound|8080||${SHOP}`,
    hash_policy: [{ header: { header_name: 'x-user' } }],
  });
});

test('the http_proxy route and an explicit upstream render the same VirtualService', () => {
  assertReviewsRoutes(hostRoutes(get(of('httpProxy'), ROUTE, 'http_proxy'), `${REVIEWS}:9080`));
  const upstream = get(of('explicit'), LISTENER, '127.0.0.1_19080');
  const hcm = at(upstream, 'filter_chains[0].filters[0].typed_config');
  assertReviewsRoutes(list(hcm, 'route_config.virtual_hosts[0].routes'));
});

test('outbound and gateway HTTP connection managers put the fault filter before the router', () => {
  const names = (listener: unknown, path: string): unknown[] =>
    list(listener, `${path}.typed_config.http_filters`).map((f) => at(f, 'name'));
  const expected = ['envoy.filters.http.fault', 'envoy.filters.http.router'];
  assert.deepEqual(
    names(get(of('transparent'), LISTENER, '0.0.0.0_9080'), 'filter_chains[0].filters[0]'),
    expected,
  );
  assert.deepEqual(
    names(get(of('httpProxy'), LISTENER, '127.0.0.1_15080'), 'filter_chains[0].filters[0]'),
    expected,
  );
  assert.deepEqual(
    names(get(of('explicit'), LISTENER, '127.0.0.1_19080'), 'filter_chains[0].filters[0]'),
    expected,
  );
  assert.deepEqual(
    names(get(of('gateway'), LISTENER, '0.0.0.0_80'), 'filter_chains[0].filters[0]'),
    expected,
  );
  // Inbound chains are not routed by VirtualServices and stay as they were.
  assert.deepEqual(names(get(of('explicit'), LISTENER, '10.0.0.1_8080'), 'filter_chains[0].filters[0]'), [
    'envoy.filters.http.router',
  ]);
});

test('tcp routes: captured and explicit TCP listeners split connections as the VirtualService says', () => {
  const split = [
    { name: `outbound|7000||${LEDGER}`, weight: 75 },
    { name: `outbound|5432||${DB}`, weight: 25 },
  ];
  const captured = get(of('transparent'), LISTENER, '240.0.0.30_7000');
  assert.deepEqual(
    at(captured, 'filter_chains[0].filters[0].typed_config.weighted_clusters.clusters'),
    split,
  );
  const explicit = get(of('explicit'), LISTENER, '127.0.0.1_17000');
  assert.deepEqual(
    at(explicit, 'filter_chains[0].filters[0].typed_config.weighted_clusters.clusters'),
    split,
  );
  // DB has no VirtualService: one cluster, as before.
  const db = get(of('transparent'), LISTENER, '240.0.0.20_5432');
  assert.equal(at(db, 'filter_chains[0].filters[0].typed_config.cluster'), `outbound|5432||${DB}`);
});

test('gateway TCP servers split connections by the bound VirtualService tcp route', () => {
  const l = get(of('gateway'), LISTENER, '0.0.0.0_7000');
  assert.deepEqual(at(l, 'filter_chains[0].filters[0].typed_config.weighted_clusters.clusters'), [
    { name: `outbound|7000||${LEDGER}`, weight: 60 },
    { name: `outbound|5432||${DB}`, weight: 40 },
  ]);
  const pg = get(of('gateway'), LISTENER, '0.0.0.0_5432');
  assert.equal(at(pg, 'filter_chains[0].filters[0].typed_config.cluster'), `outbound|5432||${DB}`);
});
