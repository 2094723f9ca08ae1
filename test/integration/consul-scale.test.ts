// Many services: 1,000 Consul services sync, idle cost stays one blocking request per watch per
// `wait` (flat in the number of services: no re-listing), and one service's change costs one
// request for that service alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/eventually.js';
import { clusterOf, startConsulPlane, XdsRecorder } from './consul-support.js';

const SERVICES = 1000;
const WAIT_MS = 2000;

test(`${SERVICES} services: full sync, one request per watch per wait at idle, a change touches one watch`, async (t) => {
  const { standin, registry, plane } = await startConsulPlane(t, {
    waitMs: WAIT_MS,
    // One connection per watch: raised, as docs/registry-consul.md tells operators to.
    standin: { maxConnsPerClient: SERVICES + 100 },
    seed: (s) =>
      s.registerMany(
        Array.from({ length: SERVICES }, (_, i) => ({
          Name: `svc-${i}`,
          ID: `svc-${i}`,
          Address: `127.0.${Math.floor(i / 250)}.${(i % 250) + 1}`,
          Port: 9000,
        })),
      ),
  });
  // 1,001 connections opened at once in this one process can outlast a first request's timeout
  // on a loaded machine; the registry retries those by itself. Past --consul-sync-timeout it is
  // ready without the services not yet answered: wait for every one of them.
  await eventually(
    () => {
      assert.equal(registry.hasSynced(), true, JSON.stringify(registry.status()));
      assert.equal(registry.status().incomplete, undefined, JSON.stringify(registry.status()));
    },
    { timeoutMs: 60_000 },
  );
  assert.equal(registry.status().services, SERVICES + 1); // and Consul's own `consul`
  const watches = SERVICES + 2; // + consul + the catalog

  const cluster = clusterOf('svc-500', 9000);
  const xds = await XdsRecorder.connect(plane.address, 'scale-1', [cluster]);
  t.after(() => xds.close());
  await xds.waitFor(cluster, (e) => e.length === 1);

  // Idle: every watch is parked; over 2 waits each re-arms about twice, never more than 3 times.
  await eventually(() => assert.ok(standin.pendingReads >= watches));
  standin.resetCounts();
  await sleep(2 * WAIT_MS);
  const idle = standin.counts.catalog + standin.counts.health;
  const busiest = Math.max(...standin.healthCounts.values());
  assert.ok(busiest <= 3, `a watch made ${busiest} requests in 2 waits`);
  assert.ok(idle <= watches * 3, `${idle} requests in 2 waits for ${watches} watches`);
  assert.ok(idle >= watches, `${idle} requests: the watches re-arm`);
  assert.ok(standin.counts.catalog <= 3);

  // One service changes: its watch and the service list's wake; no other watch does. Every watch
  // parked first: one re-arming as its wait ran out would read the change without being woken.
  await eventually(() => assert.ok(standin.pendingReads >= watches));
  standin.resetCounts();
  standin.register({ Name: 'svc-500', ID: 'svc-500-b', Address: '127.0.9.9', Port: 9000 });
  await xds.waitFor(cluster, (e) => e.length === 2);
  assert.deepEqual([...standin.wokenByChange.keys()].sort(), ['catalog', 'health:svc-500']);
});
