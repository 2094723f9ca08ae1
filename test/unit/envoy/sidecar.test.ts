// Semantics of the Envoy sidecar and gateway config: which listener routes which Host to which
// cluster, which inbound chain targets which port, which cluster type each resolution gets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import { at, list } from './at.js';
import {
  API,
  CACHE,
  collect,
  DB,
  decodedByName,
  ECHO,
  fixtureCatalog,
  fixtureProxies,
  LEGACY,
  ORIGINAL,
  SHOP,
  WEB,
  type Collected,
} from './fixture-mesh.js';

type Obj = Record<string, unknown>;

const catalog = fixtureCatalog();
const proxies = fixtureProxies();
const of = (name: keyof ReturnType<typeof fixtureProxies>): Collected =>
  collect(proxies[name] ?? assert.fail(`no proxy ${name}`), catalog);

function get(c: Collected, typeUrl: string, name: string): Obj {
  const r = decodedByName(c, typeUrl).get(name);
  assert.ok(r, `${name} is served (have ${[...decodedByName(c, typeUrl).keys()].join(', ')})`);
  return r;
}

/** The cluster a virtual host of `route` sends `host` to (first route). */
function clusterForHost(route: Obj, host: string): unknown {
  const vh = list(route, 'virtual_hosts').find((v) => list(v, 'domains').includes(host));
  return at(vh, 'routes[0].route.cluster');
}

/** The typed_config of the first filter of chain `i` of a listener. */
function filterOf(listener: Obj, i = 0): unknown {
  return at(listener, `filter_chains[${i}].filters[0].typed_config`);
}

test('transparent: virtualOutbound on 15001 hands off by original destination, unknown traffic passes through', () => {
  const c = of('transparent');
  const vo = get(c, LISTENER, 'virtualOutbound');
  assert.equal(at(vo, 'address.socket_address.port_value'), 15001);
  assert.equal(at(vo, 'use_original_dst.value'), true);
  assert.equal(at(vo, 'listener_filters[0].name'), 'envoy.filters.listener.original_dst');
  assert.equal(at(filterOf(vo), 'cluster'), 'PassthroughCluster');
  assert.equal(at(get(c, CLUSTER, 'PassthroughCluster'), 'type'), 'ORIGINAL_DST');
});

test('transparent: HTTP port 8080 uses RDS "8080", which routes each Host to its service cluster', () => {
  const c = of('transparent');
  const l = get(c, LISTENER, '0.0.0.0_8080');
  assert.equal(at(l, 'bind_to_port.value'), false);
  assert.equal(at(filterOf(l), 'rds.route_config_name'), '8080');
  const route = get(c, ROUTE, '8080');
  assert.equal(clusterForHost(route, WEB), `outbound|8080||${WEB}`);
  assert.equal(clusterForHost(route, `${WEB}:8080`), `outbound|8080||${WEB}`);
  assert.equal(clusterForHost(route, '240.0.0.10:8080'), `outbound|8080||${WEB}`);
  assert.equal(clusterForHost(route, SHOP), `outbound|8080||${SHOP}`);
  assert.equal(clusterForHost(route, '*'), 'PassthroughCluster');
});

test('transparent: TCP ports get tcp_proxy listeners, per VIP when the service has one', () => {
  const c = of('transparent');
  const db = get(c, LISTENER, '240.0.0.20_5432');
  assert.equal(at(filterOf(db), 'cluster'), `outbound|5432||${DB}`);
  assert.equal(at(filterOf(get(c, LISTENER, '0.0.0.0_6379')), 'cluster'), `outbound|6379||${CACHE}`);
  assert.equal(at(filterOf(get(c, LISTENER, '0.0.0.0_9000')), 'cluster'), `outbound|9000||${ORIGINAL}`);
});

test('REGISTRY_ONLY: unknown traffic goes to the BlackHoleCluster, unknown Hosts get 502', () => {
  const c = of('registryOnly');
  const vo = get(c, LISTENER, 'virtualOutbound');
  assert.equal(at(filterOf(vo), 'cluster'), 'BlackHoleCluster');
  assert.equal(at(vo, 'transparent.value'), true, 'TPROXY interception sets IP_TRANSPARENT');
  const catchAll = list(get(c, ROUTE, '8080'), 'virtual_hosts').find((v) => list(v, 'domains').includes('*'));
  assert.equal(at(catchAll, 'routes[0].direct_response.status'), 502);
  assert.equal(at(get(c, CLUSTER, 'BlackHoleCluster'), 'type'), 'STATIC');
});

test('transparent inbound: virtualInbound on 15006 has one chain per co-located port, to inbound|PORT||', () => {
  const c = of('transparent');
  const vi = get(c, LISTENER, 'virtualInbound');
  assert.equal(at(vi, 'address.socket_address.port_value'), 15006);
  const ports = list(vi, 'filter_chains').map((ch) => at(ch, 'filter_chain_match.destination_port.value'));
  assert.deepEqual(ports, [7070, 8080]);
  const http = list(vi, 'filter_chains').find(
    (ch) => at(ch, 'filter_chain_match.destination_port.value') === 8080,
  );
  assert.equal(
    at(http, 'filters[0].typed_config.route_config.virtual_hosts[0].routes[0].route.cluster'),
    'inbound|8080||',
  );
  const cluster = get(c, CLUSTER, 'inbound|8080||');
  const address = at(cluster, 'load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address');
  assert.deepEqual([at(address, 'address'), at(address, 'port_value')], ['127.0.0.1', 8080]);
});

test('explicit: one loopback listener per declared upstream; unknown upstreams get none', () => {
  const c = of('explicit');
  const echo = get(c, LISTENER, '127.0.0.1_17070');
  assert.equal(at(echo, 'address.socket_address.port_value'), 17070);
  assert.equal(
    at(filterOf(echo), 'route_config.virtual_hosts[0].routes[0].route.cluster'),
    `outbound|7070||${ECHO}`,
  );
  assert.equal(at(filterOf(get(c, LISTENER, '127.0.0.1_15432')), 'cluster'), `outbound|5432||${DB}`);
  assert.equal(at(get(c, LISTENER, '127.0.0.2_18080'), 'address.socket_address.address'), '127.0.0.2');
  assert.ok(!decodedByName(c, LISTENER).has('127.0.0.1_19000'));
  assert.ok(!decodedByName(c, LISTENER).has('virtualOutbound'));
});

test('explicit inbound: a listener on the endpoint address, to the app port from PORTOLAN_APP_PORTS', () => {
  const c = of('explicit');
  const l = get(c, LISTENER, '10.0.0.1_8080');
  assert.equal(at(filterOf(l), 'route_config.virtual_hosts[0].routes[0].route.cluster'), 'inbound|8080||');
  const cluster = get(c, CLUSTER, 'inbound|8080||');
  assert.equal(
    at(cluster, 'load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value'),
    18081,
  );
  const grpc = get(c, LISTENER, '10.0.0.1_7070');
  assert.equal(at(filterOf(grpc), 'route_config.virtual_hosts[0].routes[0].route.cluster'), 'inbound|7070||');
});

test('http-proxy: a loopback HTTP proxy listener routing Host:port to every HTTP service', () => {
  const c = of('httpProxy');
  const l = get(c, LISTENER, '127.0.0.1_15080');
  const hcm = filterOf(l);
  assert.equal(at(hcm, 'rds.route_config_name'), 'http_proxy');
  assert.equal(at(hcm, 'http_protocol_options.allow_absolute_url.value'), true);
  const route = get(c, ROUTE, 'http_proxy');
  assert.equal(clusterForHost(route, `${WEB}:8080`), `outbound|8080||${WEB}`);
  assert.equal(clusterForHost(route, `${SHOP}:9901`), `outbound|9901||${SHOP}`);
  assert.equal(clusterForHost(route, LEGACY), `outbound|80||${LEGACY}`, 'port 80 also matches the bare host');
  assert.equal(clusterForHost(route, `${ECHO}:7070`), `outbound|7070||${ECHO}`);
  assert.equal(clusterForHost(route, `${DB}:5432`), undefined, 'TCP services are not HTTP-proxied');
});

test('clusters: EDS for STATIC, STRICT_DNS / LOGICAL_DNS for DNS, ORIGINAL_DST for NONE; defaults set', () => {
  const c = of('transparent');
  const web = get(c, CLUSTER, `outbound|8080||${WEB}`);
  assert.equal(at(web, 'type'), 'EDS');
  assert.ok(at(web, 'eds_cluster_config.eds_config.ads'));
  assert.equal(at(web, 'connect_timeout.seconds'), '10');
  assert.equal(at(web, 'circuit_breakers.thresholds[0].max_connections.value'), 4294967295);
  assert.equal(at(get(c, CLUSTER, `outbound|80||${LEGACY}`), 'type'), 'STRICT_DNS');
  const api = get(c, CLUSTER, `outbound|443||${API}`);
  assert.equal(at(api, 'type'), 'LOGICAL_DNS');
  assert.equal(
    at(api, 'load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.address'),
    API,
  );
  const original = get(c, CLUSTER, `outbound|9000||${ORIGINAL}`);
  assert.deepEqual([at(original, 'type'), at(original, 'lb_policy')], ['ORIGINAL_DST', 'CLUSTER_PROVIDED']);
  const echo = get(c, CLUSTER, `outbound|7070||${ECHO}`);
  assert.ok(
    at(
      (at(echo, 'typed_extension_protocol_options') as Obj)[
        'envoy.extensions.upstreams.http.v3.HttpProtocolOptions'
      ],
      'explicit_http_config.http2_protocol_options',
    ),
    'gRPC upstreams speak HTTP/2',
  );
  const cla = get(c, ENDPOINT, `outbound|7070||${ECHO}`);
  assert.equal(list(cla, 'endpoints').flatMap((l) => list(l, 'lb_endpoints')).length, 2);
});

test('gateway: listeners from the selected Gateway only, TLS from files, SNI per server', () => {
  const c = of('gateway');
  assert.deepEqual([...decodedByName(c, LISTENER).keys()].sort(), [
    '0.0.0.0_443',
    '0.0.0.0_5432',
    '0.0.0.0_7000',
    '0.0.0.0_80',
  ]);
  const https = get(c, LISTENER, '0.0.0.0_443');
  const chain = at(https, 'filter_chains[0]');
  assert.deepEqual(at(chain, 'filter_chain_match.server_names'), ['shop.example.com']);
  const tls = at(chain, 'transport_socket.typed_config.common_tls_context.tls_certificates[0]');
  assert.equal(at(tls, 'certificate_chain.filename'), '/etc/certs/shop.pem');
  assert.equal(at(tls, 'private_key.filename'), '/etc/certs/shop.key');
  assert.equal(at(chain, 'filters[0].typed_config.rds.route_config_name'), 'http.443');
  assert.equal(at(filterOf(get(c, LISTENER, '0.0.0.0_5432')), 'cluster'), `outbound|5432||${DB}`);
});

test('gateway routes: a bound VirtualService routes by prefix with weights, and a default route', () => {
  const c = of('gateway');
  const route = get(c, ROUTE, 'http.80');
  const vh = list(route, 'virtual_hosts').find((v) => list(v, 'domains').includes('shop.example.com'));
  assert.ok(vh, 'virtual host for the bound VirtualService');
  assert.equal(at(vh, 'routes[0].match.prefix'), '/echo');
  assert.deepEqual(
    list(vh, 'routes[0].route.weighted_clusters.clusters').map((w) => [at(w, 'name'), at(w, 'weight.value')]),
    [
      [`outbound|7070||${ECHO}`, 80],
      [`outbound|8080||${WEB}`, 20],
    ],
  );
  assert.equal(at(vh, 'routes[1].route.cluster'), `outbound|7070|v2|${ECHO}`, 'to a subset');
  assert.equal(at(vh, 'routes[2].route.cluster'), `outbound|8080||${SHOP}`);
  assert.ok(
    !list(route, 'virtual_hosts').some((v) => list(v, 'domains').includes(WEB)),
    'mesh-only VirtualService not bound',
  );
});
