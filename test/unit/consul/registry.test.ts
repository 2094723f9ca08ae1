// ConsulRegistry's own behaviour: first sync, watches following the service list, the guards
// against partial answers, stale status and recovery, collisions. Against the stand-in Consul, or a
// scripted client where a precise interleaving is needed. What every registry does (failure,
// recovery, a real removal, stop) is in the registry contract (test/contract/consul-registry.test.ts).
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WatchPacing } from '../../../adapters/consul/blocking-watch.js';
import type { CatalogServices, HealthEntry } from '../../../adapters/consul/api.js';
import { createConsulClient, type ConsulCatalogClient } from '../../../adapters/consul/client.js';
import { ConsulRegistry } from '../../../adapters/consul/registry.js';
import { silentLogger } from '../../../log/logger.js';
import { ConsulStandin } from '../../support/consul-standin.js';
import { eventually } from '../../support/eventually.js';

const PACING: WatchPacing = {
  backoff: { initialMs: 20, maxMs: 200, jitter: 0.5 },
  rateLimit: { burst: 5, intervalMs: 20 },
};

function registryFor(client: ConsulCatalogClient): ConsulRegistry {
  return new ConsulRegistry({
    client,
    conversion: { domain: 'service.consul', warningHealthy: true, datacenter: 'dc1' },
    logger: silentLogger,
    pacing: PACING,
  });
}

async function setup(t: TestContext, { waitMs = 500 } = {}) {
  const standin = await ConsulStandin.start({ consulService: false });
  const registry = registryFor(createConsulClient({ url: new URL(standin.url), waitMs }));
  t.after(async () => {
    await registry.stop();
    await standin.stop();
  });
  return { standin, registry };
}

function hosts(registry: ConsulRegistry): string[] {
  return [...registry.snapshot().services.keys()].sort();
}

interface Debug {
  serviceWatches: number;
  problems: { source: string; message: string }[];
  hostnameCollisions: string[];
}

describe('sync', () => {
  test('start resolves after the first full sync, with every listed service', async (t) => {
    const { standin, registry } = await setup(t);
    standin.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.2', Port: 80 });
    standin.register({ Name: 'db', ID: 'db-1', Address: '127.0.0.3', Port: 5432 });
    await registry.start();
    assert.equal(registry.hasSynced(), true);
    assert.deepEqual(hosts(registry), ['db.service.consul', 'web.service.consul']);
    assert.deepEqual(registry.status().stale, false);
    assert.equal((registry.debug() as Debug).serviceWatches, 2);
  });

  test('with Consul unreachable, start resolves unsynced with the error, and syncs once Consul is back', async (t) => {
    const { standin, registry } = await setup(t);
    standin.register({ Name: 'web', Address: '127.0.0.2', Port: 80 });
    await standin.refuseConnections();
    await registry.start();
    assert.equal(registry.hasSynced(), false);
    assert.match(registry.status().lastError ?? '', /catalog\/services: .*ECONNREFUSED/);
    await standin.acceptConnections();
    await eventually(() => assert.equal(registry.hasSynced(), true));
    assert.deepEqual(hosts(registry), ['web.service.consul']);
    assert.equal(registry.status().lastError, undefined);
  });

  test("more watches than the agent's connection limit: not synced, the reason says so; synced once raised", async (t) => {
    const standin = await ConsulStandin.start({ consulService: false, maxConnsPerClient: 5 });
    for (let i = 0; i < 8; i++) standin.register({ Name: `svc-${i}`, Address: '127.0.0.2', Port: 80 + i });
    const registry = registryFor(createConsulClient({ url: new URL(standin.url), waitMs: 500 }));
    t.after(async () => {
      await registry.stop();
      await standin.stop();
    });
    await registry.start();
    await eventually(() =>
      assert.match(
        registry.status().lastError ?? '',
        /limits\.http_max_conns_per_client below the 9 connections/,
      ),
    );
    await sleep(300);
    assert.equal(registry.hasSynced(), false);
    standin.maxConnsPerClient = 200;
    await eventually(() => assert.equal(registry.hasSynced(), true));
    assert.equal(registry.snapshot().services.size, 8);
  });

  test('the first sync waits until every listed service has answered: no partial first snapshot', async () => {
    let failB = true;
    const entry = (name: string): HealthEntry => ({
      Node: { Node: 'n1', Address: '127.0.0.1', Datacenter: 'dc1', Meta: {} },
      Service: {
        ID: name,
        Service: name,
        Tags: [],
        Address: '',
        Meta: {},
        Port: 80,
        Weights: { Passing: 1, Warning: 1 },
      },
      Checks: [],
    });
    const block = (signal: AbortSignal) =>
      new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
    const served = new Set<string>();
    const client: ConsulCatalogClient = {
      services: async (index, signal) => {
        if (index > 0n) return block(signal);
        const services: CatalogServices = new Map([
          ['a', []],
          ['b', []],
        ]);
        return { body: services, index: 10n };
      },
      healthService: async (name, index, signal) => {
        if (name === 'b' && failB) throw new Error('b is failing');
        if (served.has(name) && index > 0n) return block(signal);
        served.add(name);
        return { body: [entry(name)], index: 10n };
      },
      close: () => {},
    };
    const registry = registryFor(client);
    try {
      await registry.start();
      assert.equal(registry.hasSynced(), false, 'not synced while b has never answered');
      assert.equal(registry.snapshot().services.size, 0);
      assert.match(registry.status().lastError ?? '', /health\/service\/b: b is failing/);
      failB = false;
      await eventually(() => assert.equal(registry.hasSynced(), true));
      assert.deepEqual(hosts(registry), ['a.service.consul', 'b.service.consul']);
    } finally {
      await registry.stop();
    }
  });
});

describe('following the service list', () => {
  test('a new service gets a watch; a removed one loses it, and its host is no longer requested', async (t) => {
    const { standin, registry } = await setup(t);
    standin.register({ Name: 'web', Address: '127.0.0.2', Port: 80 });
    await registry.start();
    standin.register({ Name: 'api', Address: '127.0.0.4', Port: 90 });
    await eventually(() => assert.deepEqual(hosts(registry), ['api.service.consul', 'web.service.consul']));
    assert.equal((registry.debug() as Debug).serviceWatches, 2);
    standin.deregister('api');
    await eventually(() => assert.deepEqual(hosts(registry), ['web.service.consul']));
    assert.equal((registry.debug() as Debug).serviceWatches, 1);
    await sleep(50);
    const before = standin.healthCounts.get('api') ?? 0;
    await sleep(1200); // more than two waits
    assert.equal(standin.healthCounts.get('api') ?? 0, before, 'no more reads of a removed service');
  });

  test('two Consul names with the same hostname: one is served, the collision is reported', async (t) => {
    const { standin, registry } = await setup(t);
    standin.register({ Name: 'Web', ID: 'w1', Address: '127.0.0.2', Port: 80 });
    standin.register({ Name: 'web', ID: 'w2', Address: '127.0.0.3', Port: 80 });
    await registry.start();
    assert.deepEqual(hosts(registry), ['web.service.consul']);
    assert.match(
      (registry.debug() as Debug).hostnameCollisions.join(),
      /web: web.service.consul is already served/,
    );
  });
});

describe('partial answers never shrink what is served', () => {
  test('an empty health answer for a listed service keeps its instances, marked stale, until a real answer', async (t) => {
    const { standin, registry } = await setup(t);
    standin.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.2', Port: 80 });
    standin.register({ Name: 'web', ID: 'web-2', Address: '127.0.0.3', Port: 80 });
    await registry.start();
    standin.emptyHealth('web', true);
    await eventually(() => {
      assert.equal(registry.status().stale, true);
      assert.match(
        registry.status().lastError ?? '',
        /health\/service\/web returned no instances .* keeping the 2 known/,
      );
    });
    assert.equal(registry.snapshot().endpoints.get('web.service.consul')?.length, 2);
    standin.emptyHealth('web', false);
    standin.deregister('web-2'); // a real change arrives after the fault
    await eventually(() => assert.equal(registry.snapshot().endpoints.get('web.service.consul')?.length, 1));
    assert.equal(registry.status().stale, false);
  });

  test('an empty service list when services were known is not applied', async (t) => {
    const { standin, registry } = await setup(t);
    standin.register({ Name: 'web', Address: '127.0.0.2', Port: 80 });
    await registry.start();
    standin.emptyCatalog(true);
    await eventually(() => {
      assert.equal(registry.status().stale, true);
      assert.match(registry.status().lastError ?? '', /Consul lists no services .* keeping the 1 known/);
    });
    assert.deepEqual(hosts(registry), ['web.service.consul']);
    standin.emptyCatalog(false);
    await eventually(() => assert.equal(registry.status().stale, false));
    assert.deepEqual(hosts(registry), ['web.service.consul']);
  });
});
