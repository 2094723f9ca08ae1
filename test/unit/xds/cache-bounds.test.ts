// Every cache is bounded, and eviction does not wait for a change (issue #17, item 1): the resource
// cache keeps only resources that exist, for views a stream holds (a released view goes after the idle
// time, by timer); the response cache holds at most its entries and bytes, least recently used out
// first, and drops idle responses; the subscription index remembers the names a stream asked for that
// do not exist, by host, so a change of that host reaches it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MESH_CONFIG } from '../../../mesh/mesh-config.js';
import { buildCatalog, type Catalog } from '../../../model/catalog.js';
import { changeOf } from '../../../model/change.js';
import type { Endpoint } from '../../../model/endpoint.js';
import type { Service } from '../../../model/service.js';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { encodeResource } from '../../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT } from '../../../xds/proto/type-urls.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { IDLE_EVICT_MS, ResourceCache, typeKey } from '../../../xds/server/resource-cache.js';
import { ResponseCache } from '../../../xds/server/response-cache.js';
import { SubscriptionIndex } from '../../../xds/server/subscription-index.js';
import { subscriptionKey } from '../../../xds/server/subscription-key.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';

const proxy = proxyFromNode({ id: 'p1', user_agent_name: 'gRPC Node', metadata: { NAMESPACE: 'a' } });
const other = proxyFromNode({ id: 'p2', user_agent_name: 'gRPC Node', metadata: { NAMESPACE: 'b' } });
const A = 'a.bounds.internal';
const CLUSTER_A = `outbound|7070||${A}`;

function world() {
  const services = new Map<string, Service>([[A, service(A, [servicePort('grpc', 7070)])]]);
  const endpoints = new Map<string, Endpoint[]>([[A, [endpoint('10.0.0.1', { grpc: 9000 })]]]);
  let catalog: Catalog = buildCatalog(services.values(), endpoints);
  let now = 0;
  const cache = new ResourceCache(
    (p) => generateContext({ proxy: p, catalog, config: NO_MESH_CONFIG.meshConfig() }),
    () => now,
  );
  return {
    cache,
    services,
    advance: (ms: number) => (now += ms),
    rebuild: () => (catalog = buildCatalog(services.values(), endpoints)),
  };
}

test('a name that does not exist leaves no entry; the change that creates it reports it by host', (t) => {
  const w = world();
  t.after(() => w.cache.stop());
  const later = 'later.bounds.internal';
  assert.equal(w.cache.get(grpcClusterGenerator, proxy, `outbound|7070||${later}`), undefined);
  assert.equal(w.cache.get(grpcClusterGenerator, proxy, 'no|such|name'), undefined);
  assert.equal(w.cache.size, 0);
  const epoch = w.cache.epoch('grpc', CLUSTER);
  w.services.set(later, service(later, [servicePort('grpc', 7070)]));
  w.rebuild();
  const set = w.cache.apply(changeOf({ services: [later] }));
  assert.deepEqual([...(set.hosts ?? [])], [later], 'streams missing a name of this host re-evaluate it');
  assert.notEqual(w.cache.epoch('grpc', CLUSTER), epoch, 'shared responses that lacked it are stale');
  assert.ok(w.cache.get(grpcClusterGenerator, proxy, `outbound|7070||${later}`));
});

test('an entry whose resource goes away is reported and dropped', (t) => {
  const w = world();
  t.after(() => w.cache.stop());
  w.cache.retain(grpcClusterGenerator, proxy); // a stream is open (an unheld entry goes unreported)
  w.cache.get(grpcClusterGenerator, proxy, CLUSTER_A);
  assert.equal(w.cache.size, 1);
  w.services.delete(A);
  w.rebuild();
  const set = w.cache.apply(changeOf({ services: [A] }));
  assert.deepEqual([...(set.names.get(typeKey('grpc', CLUSTER)) ?? [])], [CLUSTER_A]);
  assert.equal(w.cache.size, 0);
});

test('entries stay while a stream holds their view, however idle; a released view goes after the idle time', (t) => {
  const w = world();
  t.after(() => w.cache.stop());
  const hold = w.cache.retain(grpcClusterGenerator, proxy);
  const first = w.cache.get(grpcClusterGenerator, proxy, CLUSTER_A);
  w.cache.get(grpcClusterGenerator, other, CLUSTER_A); // a view nobody holds
  assert.equal(w.cache.size, 2);
  w.advance(IDLE_EVICT_MS * 3);
  w.cache.sweep();
  assert.equal(w.cache.size, 1, 'the unheld view went; the held one stays');
  // The held entry is still the one a change is compared with: an edit is reported.
  w.services.set(A, service(A, [servicePort('grpc', 7070)], { labels: { edited: 'yes' } }));
  w.rebuild();
  assert.equal(w.cache.get(grpcClusterGenerator, proxy, CLUSTER_A), first);
  hold.release();
  w.advance(IDLE_EVICT_MS - 1);
  w.cache.sweep();
  assert.equal(w.cache.size, 1, 'kept for a stream that comes back soon');
  w.advance(1);
  w.cache.sweep();
  assert.equal(w.cache.size, 0);
});

function resource(name: string, bytes: number) {
  return encodeResource(CLUSTER, name, { name, alt_stat_name: 'x'.repeat(bytes) });
}

test('the response cache holds at most its entries and bytes, least recently used out first', (t) => {
  const cache = new ResponseCache({ maxEntries: 3, maxBytes: 1_000, idleMs: 60_000 });
  t.after(() => cache.stop());
  let builds = 0;
  const get = (key: string, bytes = 10) =>
    cache.get('grpc CDS', 1, key, CLUSTER, () => {
      builds += 1;
      return [resource(key, bytes)];
    });
  get('a');
  get('b');
  get('c');
  get('a'); // a is now the most recently used
  get('d'); // evicts b
  assert.equal(cache.size.entries, 3);
  builds = 0;
  get('a');
  get('c');
  get('d');
  assert.equal(builds, 0, 'a, c and d were kept');
  get('b');
  assert.equal(builds, 1, 'b was evicted');
  get('big', 2_000); // alone over the byte budget: the others go, it is still served
  assert.equal(cache.size.entries, 1);
  assert.ok(cache.size.bytes > 1_000);
});

test('the response cache drops responses unused for its idle time, and a type’s responses at a new epoch', (t) => {
  let now = 0;
  const cache = new ResponseCache({ maxEntries: 100, maxBytes: 1e9, idleMs: 1000 }, () => now);
  t.after(() => cache.stop());
  cache.get('grpc CDS', 1, 'a', CLUSTER, () => [resource('a', 10)]);
  now = 500;
  cache.get('grpc CDS', 1, 'b', CLUSTER, () => [resource('b', 10)]);
  now = 1200;
  cache.sweep();
  assert.equal(cache.size.entries, 1, 'a idle for 1200 ms went, b stays');
  cache.get('grpc CDS', 2, 'c', CLUSTER, () => [resource('c', 10)]);
  assert.equal(cache.size.entries, 1, 'the new epoch dropped b');
});

test('the response cache keeps what a plain least-recently-used model keeps, through hits, evictions, sweeps and epochs', (t) => {
  let now = 0;
  const limits = { maxEntries: 5, maxBytes: 2_000, idleMs: 50 };
  const cache = new ResponseCache(limits, () => now);
  t.after(() => cache.stop());
  // The model: a Map in recency order (oldest first), of key → [body bytes, last use].
  const model = new Map<string, [number, number]>();
  let epoch = 1;
  let stale = false;
  let seed = 7;
  const random = (n: number): number => {
    seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0;
    return (seed >>> 8) % n;
  };
  const modelBytes = (): number => [...model.values()].reduce((n, [size]) => n + size, 0);
  for (let step = 0; step < 3_000; step++) {
    now += random(4);
    const op = random(100);
    if (op < 2) {
      epoch += 1; // the type's entries go when a response of the new epoch is asked for
      stale = true;
    } else if (op < 6) {
      cache.sweep();
      for (const [key, [, usedAt]] of model) if (now - usedAt >= limits.idleMs) model.delete(key);
    } else {
      if (stale) model.clear();
      stale = false;
      const key = `k${random(12)}`;
      const size = 50 + random(8) * 100;
      let built = false;
      const response = cache.get('grpc CDS', epoch, key, CLUSTER, () => {
        built = true;
        return [resource(key, size)];
      });
      const known = model.get(key);
      assert.equal(built, known === undefined, `step ${step}: ${key} built`);
      model.delete(key);
      model.set(key, [known?.[0] ?? response.body.length, now]);
      for (const oldest of model.keys()) {
        if (model.size <= limits.maxEntries && modelBytes() <= limits.maxBytes) break;
        if (oldest === key) break;
        model.delete(oldest);
      }
    }
    assert.equal(cache.size.entries, model.size, `step ${step}: entries`);
  }
});

test('a long subscription is keyed by its hash, a short one as it is', () => {
  assert.equal(subscriptionKey(false, ['b', 'a']), '-\0a\0b');
  const long = Array.from({ length: 10_000 }, (_, i) => `outbound|7070||nx-${i}.bounds.internal`);
  const key = subscriptionKey(false, long);
  assert.ok(key.startsWith('#') && key.length < 64, key);
  assert.equal(subscriptionKey(false, [...long].reverse()), key, 'order does not matter');
  assert.notEqual(subscriptionKey(true, long), key, 'wildcard is part of it');
});

test('the index finds the streams missing a name of a changed host, and forgets names found or dropped', () => {
  const index = new SubscriptionIndex<string>();
  const x = 'outbound|7070||x.bounds.internal';
  const y = 'outbound|7070||y.bounds.internal';
  index.setMissing('s1', 'grpc', CLUSTER, x, true);
  index.setMissing('s1', 'grpc', ENDPOINT, x, true);
  index.setMissing('s2', 'grpc', CLUSTER, y, true);
  index.setMissing('s2', 'grpc', CLUSTER, 'unparseable', true); // no host: only a config change helps
  const change = (host: string) => ({
    all: false,
    names: new Map(),
    types: [],
    wildcards: new Set<string>(),
    hosts: new Set([host]),
  });
  assert.deepEqual([...index.affected(change('x.bounds.internal'))], ['s1']);
  assert.deepEqual(index.missingUnder('s1', 'grpc', CLUSTER, new Set(['x.bounds.internal'])), [x]);
  index.setMissing('s1', 'grpc', CLUSTER, x, false);
  assert.deepEqual([...index.affected(change('x.bounds.internal'))], ['s1'], 'its EDS name is still missing');
  index.remove('s1');
  assert.deepEqual([...index.affected(change('x.bounds.internal'))], []);
  assert.deepEqual([...index.affected(change('y.bounds.internal'))], ['s2']);
});
