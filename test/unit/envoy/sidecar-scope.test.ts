// The Sidecar resource: which one selects a proxy (Istio's order), which services its egress hosts
// admit, and what that trims from an Envoy's CDS, EDS, listeners and routes — for that proxy only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import type { SidecarResource, SidecarSpec } from '../../../mesh/types.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { MeshIndex } from '../../../mesh/mesh-index.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE, TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { checkConsistency } from '../../../xds/validate/consistency.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { service, servicePort } from '../../support/model-fixtures.js';
import { at, list } from './at.js';
import {
  API,
  CACHE,
  collect,
  DB,
  decodedByName,
  ECHO,
  envoyProxy,
  fixtureCatalog,
  fixtureMeshConfig,
  fixtureProxies,
  LEGACY,
  ORIGINAL,
  REVIEWS,
  SCOPED_NAMESPACE,
  SHOP,
  WEB,
} from './fixture-mesh.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

const catalog = fixtureCatalog();
const proxies = fixtureProxies();
const scoped = proxies.scoped ?? assert.fail();
const unscoped = proxies.allModes ?? assert.fail();

function sidecar(name: string, namespace: string, spec: SidecarSpec): SidecarResource {
  const meta = { kind: 'Sidecar' as const, apiVersion: 'networking.istio.io/v1', name, namespace };
  return { ...meta, labels: {}, annotations: {}, spec, file: `${name}.yaml`, line: 1 };
}
function meshWith(sidecars: SidecarResource[]): MeshConfig {
  return { ...EMPTY_MESH_CONFIG, generation: 3, sidecars };
}
const sidecarFor = (config: MeshConfig, namespace: string, labels: Record<string, string>) =>
  new MeshIndex(config).sidecars.lookup(namespace, labels);
const scopeFor = (config: MeshConfig, namespace: string, labels: Record<string, string>) =>
  new MeshIndex(config).sidecars.scope(namespace, labels);
const outboundHosts = (names: Iterable<string>): string[] =>
  [...new Set([...names].filter((n) => n.startsWith('outbound|')).map((n) => n.split('|')[3] ?? ''))].sort();

test('selection: a matching workloadSelector, then the namespace default, then the root namespace', () => {
  const selected = sidecar('web-only', 'shop', {
    workloadSelector: { labels: { app: 'web' } },
    egress: [{ hosts: ['./*'] }],
  });
  const nsDefault = sidecar('default', 'shop', { egress: [{ hosts: ['*/*'] }] });
  const root = sidecar('default', 'istio-system', { egress: [{ hosts: ['istio-system/*'] }] });
  const rootSelected = sidecar('rs', 'istio-system', {
    workloadSelector: { labels: { app: 'x' } },
    egress: [{ hosts: ['./*'] }],
  });
  const config = meshWith([nsDefault, selected, root, rootSelected]);
  assert.equal(sidecarFor(config, 'shop', { app: 'web', v: '1' }), selected);
  assert.equal(sidecarFor(config, 'shop', { app: 'db' }), nsDefault);
  assert.equal(
    sidecarFor(config, 'other', { app: 'x' }),
    root,
    'root selectors do not reach other namespaces',
  );
  assert.equal(sidecarFor(meshWith([selected]), 'shop', { app: 'db' }), undefined);
});

test('egress hosts: ./*, */*, ns/*, ns/fqdn, wildcards, ~ and per-port entries', () => {
  const svc = (host: string, ns: string) =>
    service(host, [servicePort('http', 80, 'HTTP'), servicePort('grpc', 90)], { namespace: ns });
  const scope = scopeFor(
    meshWith([
      sidecar('s', 'shop', {
        egress: [
          { port: { number: 90 }, hosts: ['*/*.grpc.internal'] },
          { hosts: ['./*', 'infra/db.infra.internal', 'edge/*.example.com', '~/*', 'named/reviews'] },
        ],
      }),
    ]),
    'shop',
    {},
  );
  const { clusters, listeners } = scope;
  const on80 = (host: string, ns: string) => listeners(svc(host, ns), 80);
  assert.ok(on80('a.shop.internal', 'shop'), './* admits its own namespace');
  assert.ok(on80('db.infra.internal', 'infra'));
  assert.ok(!on80('cache.infra.internal', 'infra'), 'ns/fqdn admits that host only');
  assert.ok(on80('api.example.com', 'edge'));
  assert.ok(!on80('api.example.com', 'other'), 'the namespace part must match too');
  assert.ok(on80('reviews.named.svc.cluster.local', 'named'), 'short names resolve in the named namespace');
  assert.ok(!clusters(svc('cache.infra.internal', 'infra')), 'nor does it get the clusters');

  // Port 90 has its own entry: its listeners hold that entry's hosts only (Istio's egress listeners).
  assert.ok(listeners(svc('x.grpc.internal', 'any'), 90), 'the port entry admits its hosts on its port');
  assert.ok(!listeners(svc('x.grpc.internal', 'any'), 80), '... and on no other');
  assert.ok(
    !listeners(svc('a.shop.internal', 'shop'), 90),
    'the portless entry does not reach a port that has its own',
  );
  // Clusters are per service: every port of anything an entry names.
  assert.ok(clusters(svc('x.grpc.internal', 'any')) && clusters(svc('a.shop.internal', 'shop')));

  const all = scopeFor(meshWith([sidecar('s', 'shop', { egress: [{ hosts: ['*/*'] }] })]), 'shop', {});
  assert.ok(all.listeners(svc('anything.internal', 'anywhere'), 80));
  const none = scopeFor(EMPTY_MESH_CONFIG, 'shop', {});
  assert.ok(none.listeners(svc('x', 'y'), 1) && none.clusters(svc('x', 'y')), 'no Sidecar admits everything');
});

test('a Sidecar with egress ./* plus named hosts removes other services’ clusters and endpoints for that proxy', () => {
  const c = collect(scoped, catalog);
  assert.deepEqual(outboundHosts(decodedByName(c, CLUSTER).keys()), [ECHO, LEGACY, WEB].sort());
  assert.ok(decodedByName(c, CLUSTER).has(`outbound|7070|v1|${ECHO}`), 'subsets of admitted services stay');
  assert.deepEqual(outboundHosts(decodedByName(c, ENDPOINT).keys()), [ECHO, WEB].sort());
  const cds = envoyGenerators().find((g) => g.typeUrl === CLUSTER) ?? assert.fail();
  assert.equal(
    cds.build(
      generateContext({ proxy: scoped, catalog, config: fixtureMeshConfig() }),
      `outbound|8080||${SHOP}`,
    ),
    undefined,
  );

  const other = collect(unscoped, catalog);
  for (const host of [SHOP, DB, CACHE, API, ORIGINAL])
    assert.ok(
      outboundHosts(decodedByName(other, CLUSTER).keys()).includes(host),
      `${host} kept for the other proxy`,
    );
});

test('... and their listeners and routes; the Sidecar’s REGISTRY_ONLY closes the catch-alls', () => {
  const c = collect(scoped, catalog);
  const listeners = decodedByName(c, LISTENER);
  assert.ok(listeners.has('0.0.0.0_8080'), 'web (admitted) on 8080');
  assert.ok(!listeners.has('240.0.0.20_5432') && !listeners.has('0.0.0.0_5432'), 'no DB listener');
  assert.ok(
    !listeners.has('0.0.0.0_6379') && !listeners.has('0.0.0.0_9000'),
    'no cache or original listener',
  );
  assert.ok(listeners.has('127.0.0.1_17070'), 'declared upstream to echo kept');
  assert.ok(!listeners.has('127.0.0.1_15432'), 'declared upstream to DB dropped (its cluster is not sent)');
  assert.equal(
    at(listeners.get('virtualOutbound'), 'filter_chains[0].filters[0].typed_config.cluster'),
    'BlackHoleCluster',
  );

  const routes = decodedByName(c, ROUTE);
  const domains = (name: string) =>
    list(routes.get(name), 'virtual_hosts').flatMap((v) => list(v, 'domains'));
  assert.ok(domains('8080').includes(WEB) && !domains('8080').includes(SHOP));
  assert.equal(at(list(routes.get('8080'), 'virtual_hosts').at(-1), 'name'), 'block_all');
  assert.ok(
    domains('http_proxy').includes(`${ECHO}:7070`) && !domains('http_proxy').includes(`${SHOP}:8080`),
  );

  const other = collect(unscoped, catalog);
  assert.ok(decodedByName(other, LISTENER).has('240.0.0.20_5432'));
  const otherRoute = decodedByName(other, ROUTE).get('8080');
  assert.ok(list(otherRoute, 'virtual_hosts').some((v) => list(v, 'domains').includes(SHOP)));
});

test('the Sidecar’s namespace and the proxy’s labels are part of the CDS, LDS and RDS cache keys', () => {
  const gens = envoyGenerators();
  const selected = envoyProxy('sidecar~10.0.0.7~scoped-2~scoped.svc', {
    NAMESPACE: SCOPED_NAMESPACE,
    LABELS: { app: 'x' },
  });
  for (const type of [CLUSTER, LISTENER, ROUTE]) {
    const g = gens.find((x) => x.typeUrl === type) ?? assert.fail();
    assert.notEqual(g.viewKey(scoped), g.viewKey(unscoped), `${type} by namespace`);
    assert.notEqual(g.viewKey(scoped), g.viewKey(selected), `${type} by labels`);
  }
});

test('gateways are not scoped by Sidecars', () => {
  const gateway = proxies.gateway ?? assert.fail();
  const config = {
    ...fixtureMeshConfig(),
    generation: 99, // another config generation, as a config directory would give
    sidecars: [sidecar('root', 'istio-system', { egress: [{ hosts: ['~/*'] }] })],
  };
  assert.ok(outboundHosts(decodedByName(collect(gateway, catalog, config), CLUSTER).keys()).includes(SHOP));
  assert.deepEqual(
    outboundHosts(decodedByName(collect(unscoped, catalog, config), CLUSTER).keys()),
    [],
    'a root ~/* Sidecar empties a sidecar’s CDS',
  );
});

test('a VirtualService of an admitted host that routes outside the egress list brings those clusters (Istio: inferred destinations)', () => {
  const base = fixtureMeshConfig();
  const config: MeshConfig = {
    ...base,
    generation: 100, // another config generation, as a config directory would give
    virtualServices: [
      ...base.virtualServices.filter((vs) => vs.name !== 'mesh-only'),
      {
        kind: 'VirtualService',
        apiVersion: 'networking.istio.io/v1',
        name: 'web-to-shop',
        namespace: 'default',
        labels: {},
        annotations: {},
        file: 'web.yaml',
        line: 1,
        spec: {
          hosts: [WEB],
          http: [
            {
              match: [{ headers: { 'x-shop': { exact: '1' } } }],
              route: [{ destination: { host: SHOP, port: { number: 8080 } } }],
              mirror: { host: REVIEWS, subset: 'v2' },
            },
            { route: [{ destination: { host: WEB } }] },
          ],
        },
      },
    ],
  };
  const c = collect(scoped, catalog, config);
  assert.deepEqual(checkConsistency(c), [], 'every cluster a route names is sent');
  for (const [typeUrl, resources] of c)
    for (const r of resources)
      assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], r.name);
  const clusters = decodedByName(c, CLUSTER);
  assert.deepEqual(outboundHosts(clusters.keys()), [ECHO, LEGACY, REVIEWS, SHOP, WEB].sort());
  assert.ok(clusters.has(`outbound|9080|v2|${REVIEWS}`), 'the mirrored subset');
  const web = list(decodedByName(c, ROUTE).get('8080'), 'virtual_hosts').find((v) =>
    list(v, 'domains').includes(WEB),
  );
  assert.equal(at(web, 'routes[0].route.cluster'), `outbound|8080||${SHOP}`);
  // The Sidecar still decides what the proxy can address: no listener or virtual host for SHOP.
  const domains = list(decodedByName(c, ROUTE).get('8080'), 'virtual_hosts').flatMap((v) =>
    list(v, 'domains'),
  );
  assert.ok(!domains.includes(SHOP));
  assert.ok(!decodedByName(c, LISTENER).has('0.0.0.0_9080'), 'no listener for REVIEWS');
  // Without the VirtualService, SHOP is not sent (the test above).
  assert.ok(!outboundHosts(decodedByName(collect(scoped, catalog), CLUSTER).keys()).includes(SHOP));
});
