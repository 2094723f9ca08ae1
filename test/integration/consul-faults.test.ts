// Every Consul fault the stand-in can inject, with a raw ADS client connected throughout: the client
// never gets an empty (or shrunk) endpoint set because of the fault, the registry is marked stale
// with the reason while it lasts, and a change made during the fault arrives once it clears.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ConsulStandin } from '../support/consul-standin.js';
import { eventually } from '../support/eventually.js';
import { addresses, clusterOf, startConsulPlane, XdsRecorder, type ConsulPlane } from './consul-support.js';

const WEB = clusterOf('web', 8080);

interface Fault {
  inject(standin: ConsulStandin): void | Promise<void>;
  clear(standin: ConsulStandin): void | Promise<void>;
  /** What the registry's status says while the fault lasts. */
  reason: RegExp;
}

async function seeded(t: TestContext): Promise<ConsulPlane & { xds: XdsRecorder }> {
  const setup = await startConsulPlane(t, {
    waitMs: 400,
    seed: (s) => {
      s.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.11', Port: 8080 });
      s.register({ Name: 'web', ID: 'web-2', Address: '127.0.0.12', Port: 8080 });
    },
  });
  const xds = await XdsRecorder.connect(setup.plane.address, `faults-${t.name.slice(0, 20)}`, [WEB]);
  t.after(() => xds.close());
  await xds.waitFor(WEB, (e) => e.length === 2);
  return { ...setup, xds };
}

/** Injects the fault, holds it past several waits, changes Consul meanwhile, clears it, checks all. */
async function survive(t: TestContext, fault: Fault): Promise<void> {
  const { standin, registry, xds } = await seeded(t);
  const from = xds.seen.length;
  await fault.inject(standin);
  // Under load a transient error (a slow answer timing out) may come first; each watch's entry then
  // takes the fault's own error at its next attempt.
  await eventually(
    () => {
      assert.equal(registry.status().stale, true);
      assert.match(registry.status().lastError ?? '', fault.reason);
    },
    { timeoutMs: 5000 },
  );
  standin.register({ Name: 'web', ID: 'web-3', Address: '127.0.0.13', Port: 8080 }); // direct: works mid-fault
  await sleep(1500); // several `wait`s and client timeouts
  assert.equal(registry.status().stale, true, 'still stale while the fault lasts');
  assert.deepEqual(registry.status().services, 2, 'web and consul are still served');
  await fault.clear(standin);
  const after = await xds.waitFor(WEB, (e) => e.length === 3);
  assert.deepEqual(addresses(after), ['127.0.0.11', '127.0.0.12', '127.0.0.13']);
  await eventually(() => assert.equal(registry.status().stale, false));
  xds.assertNeverBelow(WEB, 2, from);
}

test('500s from Consul (no cluster leader)', async (t) => {
  await survive(t, {
    inject: (s) => s.failReads({ status: 500, message: 'rpc error making call: No cluster leader' }),
    clear: (s) => s.failReads(undefined),
    reason: /No cluster leader/,
  });
});

test('Consul hangs past `wait`: the client-side timeout notices', async (t) => {
  await survive(t, {
    inject: (s) => s.hang(),
    clear: (s) => s.unhang(),
    reason: /timed out/,
  });
});

test('connection refused (the agent is down), then back', async (t) => {
  await survive(t, {
    inject: (s) => s.refuseConnections(),
    clear: (s) => s.acceptConnections(),
    reason: /ECONNREFUSED|ECONNRESET|socket hang up/,
  });
});

test('malformed answers', async (t) => {
  await survive(t, {
    inject: (s) => s.malformed(true),
    clear: (s) => s.malformed(false),
    reason: /expected a JSON (object|array)/,
  });
});

test('a partial answer: the catalog suddenly lists no services', async (t) => {
  await survive(t, {
    inject: (s) => s.emptyCatalog(true),
    clear: (s) => s.emptyCatalog(false),
    reason: /Consul lists no services/,
  });
});

test('a partial answer: a listed service returns no instances', async (t) => {
  await survive(t, {
    inject: (s) => s.emptyHealth('web', true),
    clear: (s) => s.emptyHealth('web', false),
    reason: /health\/service\/web returned no instances/,
  });
});

test('index reset (snapshot restore): watches restart from 0 and keep following changes', async (t) => {
  const { standin, registry, xds } = await seeded(t);
  const from = xds.seen.length;
  await eventually(() => assert.ok(standin.pendingReads >= 3)); // catalog, web, consul blocked
  standin.resetIndex(2);
  await eventually(() => assert.ok((registry.debug() as { indexResets: number }).indexResets >= 3));
  standin.register({ Name: 'web', ID: 'web-3', Address: '127.0.0.13', Port: 8080 });
  await xds.waitFor(WEB, (e) => e.length === 3, 3000);
  standin.deregister('web-3');
  await xds.waitFor(WEB, (e) => e.length === 2, 3000);
  assert.equal(registry.status().stale, false);
  xds.assertNeverBelow(WEB, 2, from);
});

test('X-Consul-Index 0 (a Consul bug): watches are rate limited instead of busy-looping', async (t) => {
  const { standin, registry, xds } = await startConsulPlane(t, {
    waitMs: 400,
    pacing: { backoff: { initialMs: 50, maxMs: 400, jitter: 0.5 }, rateLimit: { burst: 2, intervalMs: 200 } },
    seed: (s) => s.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.11', Port: 8080 }),
  }).then(async (setup) => ({
    ...setup,
    xds: await XdsRecorder.connect(setup.plane.address, 'zero-index', [WEB]),
  }));
  t.after(() => xds.close());
  await xds.waitFor(WEB, (e) => e.length === 1);
  const from = xds.seen.length;
  standin.zeroIndex(true);
  standin.setCheck('service:web-1', 'passing'); // wake the watches into the fault
  standin.resetCounts();
  await sleep(1000);
  const requests = standin.counts.catalog + standin.counts.health;
  standin.zeroIndex(false);
  // 3 watches (catalog, web, consul): at most 2 + 1000/200 + 1 each.
  assert.ok(requests <= 3 * 8, `${requests} requests in 1 s`);
  standin.register({ Name: 'web', ID: 'web-2', Address: '127.0.0.12', Port: 8080 });
  await xds.waitFor(WEB, (e) => e.length === 2);
  assert.equal(registry.status().stale, false);
  xds.assertNeverBelow(WEB, 1, from);
});
