// The shared resource cache: what a change rebuilds and reports, for proxyless gRPC and Envoy views.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import { buildCatalog, type Catalog } from '../../../model/catalog.js';
import type { Endpoint } from '../../../model/endpoint.js';
import type { Service } from '../../../model/service.js';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { grpcEndpointGenerator } from '../../../xds/generators/grpc/endpoint.js';
import { grpcListenerGenerator } from '../../../xds/generators/grpc/listener.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { narrowChange } from '../../../xds/server/narrow-change.js';
import { everythingChanged } from '../../../model/change.js';
import { ResourceCache, typeKey, wildcardKey } from '../../../xds/server/resource-cache.js';
import { CLUSTER, ENDPOINT, LISTENER } from '../../../xds/proto/type-urls.js';
import { configResource, destinationRule } from '../../support/mesh-fixtures.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../../../xds/generators/grpc/server-listener.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { generateContext, memoSlot, servingView } from '../../../xds/generators/view-memo.js';
import type { GenerateContext, ResourceGenerator, ServingView } from '../../../xds/generators/generator.js';
import { encodeResource } from '../../../xds/proto/resource.js';

const proxy = proxyFromNode({ id: 'p1', user_agent_name: 'gRPC Node' });
const A = 'a.mock.internal';
const B = 'b.mock.internal';
const CLUSTER_A = `outbound|7070||${A}`;
const CLUSTER_B = `outbound|7070||${B}`;

function world() {
  const services = new Map<string, Service>([
    [A, service(A, [servicePort('grpc', 7070)])],
    [B, service(B, [servicePort('grpc', 7070)])],
  ]);
  const endpoints = new Map<string, Endpoint[]>([
    [A, [endpoint('10.0.0.1', { grpc: 9000 })]],
    [B, [endpoint('10.0.0.2', { grpc: 9000 })]],
  ]);
  let catalog: Catalog = buildCatalog(services.values(), endpoints);
  const cache = new ResourceCache((p) =>
    generateContext({ proxy: p, catalog, config: NO_MESH_CONFIG.meshConfig() }),
  );
  // `proxy` has a stream open, as the server's caches always do for what they rebuild.
  for (const g of [grpcClusterGenerator, grpcEndpointGenerator, grpcListenerGenerator])
    cache.retain(g, proxy);
  return {
    cache,
    services,
    endpoints,
    rebuild() {
      catalog = buildCatalog(services.values(), endpoints);
    },
  };
}

const changed = (set: ReturnType<ResourceCache['apply']>, typeUrl: string): string[] =>
  [...(set.names.get(typeKey('grpc', typeUrl)) ?? [])].sort();

test('an endpoint change rebuilds the load assignment of that host only, and reports it', () => {
  const w = world();
  const before = w.cache.get(grpcEndpointGenerator, proxy, CLUSTER_A);
  const otherBefore = w.cache.get(grpcEndpointGenerator, proxy, CLUSTER_B);
  w.cache.get(grpcClusterGenerator, proxy, CLUSTER_A);
  w.endpoints.set(A, [endpoint('10.0.0.9', { grpc: 9000 })]);
  w.rebuild();
  const epoch = w.cache.epoch('grpc', ENDPOINT);
  const set = w.cache.apply({ hostnames: new Set([A]), endpointsOnly: true });
  assert.equal(set.all, false);
  assert.deepEqual(changed(set, ENDPOINT), [CLUSTER_A]);
  assert.deepEqual(changed(set, CLUSTER), [], 'an EDS cluster does not embed endpoints: unchanged bytes');
  assert.notEqual(w.cache.epoch('grpc', ENDPOINT), epoch);
  const after = w.cache.get(grpcEndpointGenerator, proxy, CLUSTER_A);
  assert.notEqual(after?.version, before?.version);
  assert.equal(
    w.cache.get(grpcEndpointGenerator, proxy, CLUSTER_B),
    otherBefore,
    'the other host is kept as is',
  );
});

test('a change that leaves the bytes equal reports nothing', () => {
  const w = world();
  w.cache.get(grpcEndpointGenerator, proxy, CLUSTER_A);
  w.endpoints.set(A, [endpoint('10.0.0.1', { grpc: 9000 })]);
  w.rebuild();
  const set = w.cache.apply({ hostnames: new Set([A]), endpointsOnly: true });
  assert.equal(set.names.size, 0);
});

test('a new service changes the wildcard lists it appears in', () => {
  const w = world();
  w.cache.wildcardNames(grpcClusterGenerator, proxy);
  w.cache.wildcardNames(grpcListenerGenerator, proxy);
  const C = 'c.mock.internal';
  w.services.set(C, service(C, [servicePort('grpc', 7070)]));
  w.rebuild();
  const set = w.cache.apply({ hostnames: new Set([C]), endpointsOnly: false });
  assert.ok(set.wildcards.has(wildcardKey('grpc', CLUSTER, grpcClusterGenerator.viewKey(proxy))));
  assert.ok(set.wildcards.has(wildcardKey('grpc', LISTENER, grpcListenerGenerator.viewKey(proxy))));
  assert.ok(w.cache.wildcardNames(grpcClusterGenerator, proxy).set.has(`outbound|7070||${C}`));
});

test('endpoint-only changes leave proxyless wildcard lists alone', () => {
  const w = world();
  w.cache.wildcardNames(grpcClusterGenerator, proxy);
  w.endpoints.set(A, []);
  w.rebuild();
  const set = w.cache.apply({ hostnames: new Set([A]), endpointsOnly: true });
  assert.equal(set.wildcards.size, 0);
});

test('a removed service reports its resources as changed (gone)', () => {
  const w = world();
  w.cache.get(grpcClusterGenerator, proxy, CLUSTER_B);
  w.services.delete(B);
  w.endpoints.delete(B);
  w.rebuild();
  const set = w.cache.apply({ hostnames: new Set([B]), endpointsOnly: false });
  assert.deepEqual(changed(set, CLUSTER), [CLUSTER_B]);
  assert.equal(w.cache.get(grpcClusterGenerator, proxy, CLUSTER_B), undefined);
});

test('a change without hostnames (config) drops everything', () => {
  const w = world();
  w.cache.get(grpcClusterGenerator, proxy, CLUSTER_A);
  const epoch = w.cache.epoch('grpc', CLUSTER);
  const set = w.cache.apply({ hostnames: new Set(), endpointsOnly: false });
  assert.equal(set.all, true);
  assert.equal(w.cache.size, 0);
  assert.notEqual(w.cache.epoch('grpc', CLUSTER), epoch);
});

/** `generator`, counting the resources it builds. */
function counting<G extends ResourceGenerator>(generator: G): G & { builds: number } {
  const counted = { ...generator, builds: 0 };
  counted.build = (ctx, name) => {
    counted.builds += 1;
    return generator.build(ctx, name);
  };
  return counted;
}

test('a change drops, and does not build, the entries of a view no stream holds; a stream that comes back builds them', () => {
  const w = world();
  const eds = counting(grpcEndpointGenerator);
  const hold = w.cache.retain(eds, proxy);
  const before = w.cache.get(eds, proxy, CLUSTER_A, hold.key);
  hold.release(); // the stream closed; the view waits out IDLE_EVICT_MS
  w.endpoints.set(A, [endpoint('10.0.0.9', { grpc: 9000 })]);
  w.rebuild();
  const epoch = w.cache.epoch('grpc', ENDPOINT);
  const builds = eds.builds;
  const set = w.cache.apply({ hostnames: new Set([A]), endpointsOnly: true });
  assert.equal(eds.builds, builds, 'nothing was built for the unheld view');
  assert.deepEqual(changed(set, ENDPOINT), [], 'no stream to tell');
  assert.notEqual(w.cache.epoch('grpc', ENDPOINT), epoch, "the type's shared responses are stale");
  const again = w.cache.retain(eds, proxy);
  const after = w.cache.get(eds, proxy, CLUSTER_A, again.key);
  assert.equal(eds.builds, builds + 1, 'built again once asked for');
  assert.notEqual(after?.version, before?.version, 'with the new endpoints');
});

test('a change rebuilds and reports the entries of a view a stream still holds', () => {
  const w = world();
  const eds = counting(grpcEndpointGenerator);
  const hold = w.cache.retain(eds, proxy);
  w.cache.get(eds, proxy, CLUSTER_A, hold.key);
  w.endpoints.set(A, [endpoint('10.0.0.9', { grpc: 9000 })]);
  w.rebuild();
  const builds = eds.builds;
  const set = w.cache.apply({ hostnames: new Set([A]), endpointsOnly: true });
  assert.equal(eds.builds, builds + 1);
  assert.deepEqual(changed(set, ENDPOINT), [CLUSTER_A]);
});

test('a change drops the wildcard list of a view no stream holds, and moves its type on', () => {
  const w = world();
  const cds = counting(grpcClusterGenerator);
  const hold = w.cache.retain(cds, proxy);
  w.cache.wildcardNames(cds, proxy, hold.key);
  hold.release();
  const epoch = w.cache.epoch('grpc', CLUSTER);
  w.services.set('c.mock.internal', service('c.mock.internal', [servicePort('grpc', 7070)]));
  w.rebuild();
  const set = w.cache.apply({ hostnames: new Set(['c.mock.internal']), endpointsOnly: false });
  assert.equal(set.wildcards.size, 0);
  assert.notEqual(w.cache.epoch('grpc', CLUSTER), epoch);
  assert.ok(w.cache.wildcardNames(cds, proxy).names.includes('outbound|7070||c.mock.internal'));
});

test("an Envoy listener (catalog-wide) of a view no stream holds is dropped, not built, and its type's responses go stale", () => {
  const w = world();
  const sidecar = proxyFromNode({
    id: 'sidecar~10.9.9.9~s~default.svc',
    user_agent_name: 'envoy',
    metadata: { INTERCEPTION_MODE: 'REDIRECT' },
  });
  const lds = counting(envoyGenerators().find((g) => g.typeUrl === LISTENER) ?? assert.fail());
  const hold = w.cache.retain(lds, sidecar);
  const built = w.cache
    .wildcardNames(lds, sidecar, hold.key)
    .names.filter((n) => w.cache.get(lds, sidecar, n, hold.key));
  assert.ok(built.length > 0, `listeners: ${built.join(', ')}`);
  hold.release();
  const epoch = w.cache.epoch('envoy', LISTENER);
  w.services.set(A, service(A, [servicePort('grpc', 7070)], { labels: { edited: 'yes' } }));
  w.rebuild();
  const builds = lds.builds;
  const set = w.cache.apply({ hostnames: new Set([A]), endpointsOnly: false });
  assert.equal(lds.builds, builds, 'nothing was built for the unheld view');
  assert.equal(set.names.get(typeKey('envoy', LISTENER)), undefined, 'no stream to tell');
  assert.notEqual(w.cache.epoch('envoy', LISTENER), epoch, "the type's shared responses are stale");
});

test('a service change rebuilds the resources of its own host, not those of every other host', () => {
  const w = world();
  const cds = counting(grpcClusterGenerator);
  const hold = w.cache.retain(cds, proxy);
  w.cache.get(cds, proxy, CLUSTER_A, hold.key);
  const b = w.cache.get(cds, proxy, CLUSTER_B, hold.key);
  const C = 'c.mock.internal';
  w.services.set(C, service(C, [servicePort('grpc', 7070)]));
  w.rebuild();
  let builds = cds.builds;
  w.cache.apply({ hostnames: new Set([C]), endpointsOnly: false });
  assert.equal(cds.builds, builds, 'a new service rebuilds no cluster of another host');
  w.services.set(B, service(B, [servicePort('grpc', 7070), servicePort('http', 8080)]));
  w.rebuild();
  builds = cds.builds;
  w.cache.apply({ hostnames: new Set([B]), endpointsOnly: false });
  assert.equal(cds.builds, builds + 1, "B's cluster alone");
  assert.equal(w.cache.get(cds, proxy, CLUSTER_B, hold.key)?.name, b?.name);
});

test('an endpoint change rebuilds a DNS cluster, which embeds an address, and leaves an EDS cluster unbuilt', () => {
  const w = world();
  w.services.set(B, service(B, [servicePort('grpc', 7070)], { resolution: 'DNS' }));
  w.rebuild();
  const cds = counting(grpcClusterGenerator);
  const hold = w.cache.retain(cds, proxy);
  w.cache.get(cds, proxy, CLUSTER_A, hold.key);
  w.cache.get(cds, proxy, CLUSTER_B, hold.key);
  let builds = cds.builds;
  w.endpoints.set(A, [endpoint('10.0.0.9', { grpc: 9000 })]);
  w.rebuild();
  w.cache.apply({ hostnames: new Set([A]), endpointsOnly: true });
  assert.equal(cds.builds, builds, 'the EDS cluster of A read no endpoint');
  w.endpoints.set(B, [endpoint('10.0.0.8', { grpc: 9000 })]);
  w.rebuild();
  builds = cds.builds;
  const set = w.cache.apply({ hostnames: new Set([B]), endpointsOnly: true });
  assert.equal(cds.builds, builds + 1, "B's DNS cluster");
  assert.deepEqual(changed(set, CLUSTER), [CLUSTER_B]);
  const address = w.cache.get(cds, proxy, CLUSTER_B, hold.key);
  assert.ok(address?.value.includes(Buffer.from('10.0.0.8')), 'the new address is served');
});

test('a resource that read another host, directly or through a shared memoized value, is rebuilt when that host changes', () => {
  const services = new Map<string, Service>([
    [A, service(A, [servicePort('grpc', 7070)])],
    [B, service(B, [servicePort('grpc', 7070)])],
  ]);
  let catalog: Catalog = buildCatalog(services.values(), new Map());
  // One serving view per catalog, shared by every build (its memo with it), as the server's.
  let view: ServingView | undefined;
  const cache = new ResourceCache((p) => {
    view = servingView({ catalog, config: NO_MESH_CONFIG.meshConfig() }, view);
    return { ...view, proxy: p };
  });
  // Clusters of A whose bytes follow B's ports, as a route to another service's port follows them.
  const PORTS_OF_B = memoSlot<number>('ports of B');
  const direct: ResourceGenerator = {
    ...grpcClusterGenerator,
    build: (ctx, name) =>
      encodeResource(CLUSTER, name, {
        name,
        connect_timeout: { seconds: ctx.catalog.service(B)?.ports.length },
      }),
  };
  const memoized: ResourceGenerator = {
    ...grpcClusterGenerator,
    build: (ctx, name) => {
      const ports = ctx.memo.get(PORTS_OF_B, '', () => ctx.catalog.service(B)?.ports.length ?? 0);
      return encodeResource(CLUSTER, name, { name, connect_timeout: { seconds: ports } });
    },
  };
  const names = [CLUSTER_A, `outbound|8080||${A}`];
  const holds = [direct, memoized].map((g) => cache.retain(g, proxy));
  const before = names.flatMap((n) =>
    [direct, memoized].map((g, i) => cache.get(g, proxy, n, holds[i]?.key)),
  );
  services.set(B, service(B, [servicePort('grpc', 7070), servicePort('http', 8080)]));
  catalog = buildCatalog(services.values(), new Map());
  const set = cache.apply({ hostnames: new Set([B]), endpointsOnly: false });
  assert.deepEqual(changed(set, CLUSTER), [...names].sort());
  const after = names.flatMap((n) => [direct, memoized].map((g, i) => cache.get(g, proxy, n, holds[i]?.key)));
  after.forEach((r, i) => assert.notEqual(r?.version, before[i]?.version, `${r?.name} rebuilt`));
});

test('a config change narrowed to a host rebuilds what looked up its rules, and all of what reads the config otherwise', () => {
  const services = new Map<string, Service>([
    [A, service(A, [servicePort('grpc', 7070)])],
    [B, service(B, [servicePort('grpc', 7070)])],
  ]);
  const catalog = buildCatalog(services.values(), new Map());
  const rule = (maxRequests: number) =>
    destinationRule('b', {
      host: B,
      trafficPolicy: { connectionPool: { http: { http2MaxRequests: maxRequests } } },
    });
  let config: MeshConfig = { ...NO_MESH_CONFIG.meshConfig(), destinationRules: [rule(5)] };
  let view: ServingView | undefined;
  const cache = new ResourceCache((p) => {
    view = servingView({ catalog, config }, view);
    return { ...view, proxy: p };
  });
  const limitOfB = (ctx: GenerateContext): number =>
    ctx.index.destinationRules.lookup(B, ctx.proxy.namespace)?.spec.trafficPolicy?.connectionPool?.http
      ?.http2MaxRequests ?? 0;
  const cluster = (name: string, seconds: number) =>
    encodeResource(CLUSTER, name, { name, connect_timeout: { seconds } });
  // A's clusters, built from B's rule directly or through a memoized value; from nothing of B; and
  // by a generator that reads the config without saying how (not configByHost).
  const LIMIT = memoSlot<number>('limit of B');
  const direct = counting({ ...grpcClusterGenerator, build: (ctx, name) => cluster(name, limitOfB(ctx)) });
  const memoized = counting({
    ...grpcClusterGenerator,
    build: (ctx, name) =>
      cluster(
        name,
        ctx.memo.get(LIMIT, '', () => limitOfB(ctx)),
      ),
  });
  const unrelated = counting({ ...grpcClusterGenerator, build: (_ctx, name) => cluster(name, 1) });
  const wide = counting({
    ...grpcClusterGenerator,
    configByHost: false,
    build: (ctx, name) => cluster(name, ctx.config.destinationRules.length),
  });
  const generators = [direct, memoized, unrelated, wide];
  const holds = generators.map((g) => cache.retain(g, proxy));
  const read = () => generators.map((g, i) => cache.get(g, proxy, CLUSTER_A, holds[i]?.key)?.version);
  const before = read();
  const builds = generators.map((g) => g.builds);

  const previous = config;
  config = { ...config, destinationRules: [rule(9)] };
  const set = cache.apply(narrowChange(everythingChanged(), previous, config));
  assert.equal(set.all, false);
  assert.deepEqual([...(set.hosts ?? [])], [B]);
  assert.deepEqual(changed(set, CLUSTER), [CLUSTER_A]);
  assert.deepEqual(
    generators.map((g, i) => g.builds - (builds[i] ?? 0)),
    [1, 1, 0, 1],
    'rebuilt: what read B’s rule (directly, through the memo) and the config-wide generator; not the rest',
  );
  const after = read();
  assert.notEqual(after[0], before[0]);
  assert.notEqual(after[1], before[1]);
  assert.equal(after[2], before[2]);
  assert.equal(after[3], before[3]); // rebuilt, and its bytes (one rule either way) did not change
});

test('a config change that moves EDS views reports the moved holds and keeps every other entry', () => {
  const catalog = buildCatalog(
    [service(A, [servicePort('grpc', 7070)]), service(B, [servicePort('grpc', 7070)])],
    new Map([[A, [endpoint('10.0.0.1', { grpc: 9000 })]]]),
  );
  // Outlier detection on B's rule: failover by locality, which every EDS view of the mesh then reads.
  const outlierOnB = destinationRule('b', {
    host: B,
    trafficPolicy: { outlierDetection: { consecutive5xxErrors: 3 } },
  });
  let config: MeshConfig = NO_MESH_CONFIG.meshConfig();
  let view: ServingView | undefined;
  const cache = new ResourceCache((p) => {
    view = servingView({ catalog, config }, view);
    return { ...view, proxy: p };
  });
  const eds = cache.retain(grpcEndpointGenerator, proxy);
  const cds = cache.retain(grpcClusterGenerator, proxy);
  const clusterA = cache.get(grpcClusterGenerator, proxy, CLUSTER_A, cds.key);
  const assignmentA = cache.get(grpcEndpointGenerator, proxy, CLUSTER_A, eds.key);
  const keyBefore = eds.key;

  const previous = config;
  config = { ...config, destinationRules: [outlierOnB] };
  const set = cache.apply(narrowChange(everythingChanged(), previous, config));
  assert.equal(set.all, false, 'not a change to everything');
  assert.notEqual(eds.key, keyBefore, 'the EDS hold moved to the view that reads the locality');
  assert.deepEqual([...(set.moved ?? [])], [eds], 'reported: the moved hold, not the CDS one');
  assert.equal(
    cache.get(grpcClusterGenerator, proxy, CLUSTER_A, cds.key),
    clusterA,
    'A’s cluster is kept as it was, not rebuilt',
  );
  const moved = cache.get(grpcEndpointGenerator, proxy, CLUSTER_A, eds.key);
  assert.notEqual(moved, assignmentA, 'built anew in the new view');
  assert.equal(moved?.version, assignmentA?.version, 'A has no rule: its endpoints are as before');
});

test('an AuthorizationPolicy change rebuilds the server listeners that read it, and keeps client listeners, clusters and load assignments', () => {
  const catalog = buildCatalog(
    [service(A, [servicePort('grpc', 7070)])],
    new Map([[A, [endpoint('10.0.0.1', { grpc: 9000 })]]]),
  );
  const server = proxyFromNode({
    id: 'server-1',
    user_agent_name: 'gRPC Node',
    metadata: { NAMESPACE: 'shop', LABELS: { app: 'ledger' } },
  });
  const serverListener = GRPC_SERVER_LISTENER_TEMPLATE.replace('%s', '0.0.0.0:7070');
  let config: MeshConfig = NO_MESH_CONFIG.meshConfig();
  let view: ServingView | undefined;
  const cache = new ResourceCache((p) => {
    view = servingView({ catalog, config }, view);
    return { ...view, proxy: p };
  });
  const generators = [grpcClusterGenerator, grpcEndpointGenerator, grpcListenerGenerator].map(counting);
  const [cds, eds, lds] = generators.map((g) => ({ g, hold: cache.retain(g, server) }));
  if (!cds || !eds || !lds) throw new Error('three generators');
  const cluster = cache.get(cds.g, server, CLUSTER_A, cds.hold.key);
  const assignment = cache.get(eds.g, server, CLUSTER_A, eds.hold.key);
  const before = cache.get(lds.g, server, serverListener, lds.hold.key);
  const clientListener = cache.get(lds.g, server, `${A}:7070`, lds.hold.key);
  const builds = generators.map((g) => g.builds);

  const previous = config;
  const policy = configResource(
    'AuthorizationPolicy',
    'ledger-callers',
    {
      selector: { matchLabels: { app: 'ledger' } },
      rules: [{ from: [{ source: { principals: ['cluster.local/ns/shop/sa/web'] } }] }],
    },
    'shop',
  );
  config = { ...config, authorizationPolicies: [policy] };
  const set = cache.apply(narrowChange(everythingChanged(), previous, config));
  assert.equal(set.all, false, 'not a change to everything');
  assert.deepEqual(changed(set, LISTENER), [serverListener], 'the server listener gained its RBAC filter');
  assert.deepEqual(changed(set, CLUSTER), []);
  assert.deepEqual(changed(set, ENDPOINT), []);
  assert.equal(cds.g.builds, builds[0], 'no cluster was built again');
  assert.equal(eds.g.builds, builds[1], 'no load assignment was built again');
  assert.equal(lds.g.builds, (builds[2] ?? 0) + 1, 'the server listener alone was built again');
  assert.equal(cache.get(cds.g, server, CLUSTER_A, cds.hold.key), cluster);
  assert.equal(cache.get(eds.g, server, CLUSTER_A, eds.hold.key), assignment);
  const after = cache.get(lds.g, server, serverListener, lds.hold.key);
  assert.notEqual(after?.version, before?.version);
  assert.equal(cache.get(lds.g, server, `${A}:7070`, lds.hold.key)?.version, clientListener?.version);
});
