// The caches' idle eviction runs by itself: their own interval timers call sweep() (the other cache
// tests call sweep() by hand). Node's mock timers stand in for the interval, and an injected clock
// for the time the entries were last used: no real wait.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NO_MESH_CONFIG } from '../../../mesh/mesh-config.js';
import { buildCatalog } from '../../../model/catalog.js';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { encodeResource } from '../../../xds/proto/resource.js';
import { CLUSTER } from '../../../xds/proto/type-urls.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { IDLE_EVICT_MS, ResourceCache } from '../../../xds/server/resource-cache.js';
import { ResponseCache } from '../../../xds/server/response-cache.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';

const A = 'a.sweep.internal';
const proxy = proxyFromNode({ id: 'p1', user_agent_name: 'gRPC Node', metadata: { NAMESPACE: 'a' } });

test("the response cache's timer drops responses idle past idleMs", (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let now = 0;
  const cache = new ResponseCache({ maxEntries: 100, maxBytes: 1e9, idleMs: 1000 }, () => now);
  t.after(() => cache.stop());
  cache.get('grpc CDS', 1, 'a', CLUSTER, () => [encodeResource(CLUSTER, 'a', { name: 'a' })]);
  now = 1500;
  t.mock.timers.tick(999);
  assert.equal(cache.size.entries, 1, 'no sweep before the interval');
  t.mock.timers.tick(1);
  assert.equal(cache.size.entries, 0, 'the timer swept the idle response');
});

test("the resource cache's timer drops views no stream held for IDLE_EVICT_MS, within a minute", (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  let now = 0;
  const catalog = buildCatalog(
    [service(A, [servicePort('grpc', 7070)])],
    new Map([[A, [endpoint('10.0.0.1', { grpc: 9000 })]]]),
  );
  const cache = new ResourceCache(
    (p) => generateContext({ proxy: p, catalog, config: NO_MESH_CONFIG.meshConfig() }),
    () => now,
  );
  t.after(() => cache.stop());
  assert.ok(cache.get(grpcClusterGenerator, proxy, `outbound|7070||${A}`));
  assert.equal(cache.size, 1);
  now = IDLE_EVICT_MS;
  t.mock.timers.tick(59_999);
  assert.equal(cache.size, 1, 'no sweep before the interval');
  t.mock.timers.tick(1);
  assert.equal(cache.size, 0, 'the timer swept the idle view');
});
