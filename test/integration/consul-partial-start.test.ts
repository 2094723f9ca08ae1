// Two bounds on the Consul registry's guards, against the stand-in Consul:
// - a cold start where one service's health query keeps failing used to hold the first sync (and
//   so every xDS stream) back forever; past --consul-sync-timeout the registry is ready with what
//   synced, and names the failing service in /ready's body and /debug/registryz;
// - an empty answer for a listed service used to be held back forever; it is held for
//   --consul-empty-hold, then applied (the service stays, with no endpoints), no longer stale.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createConsulClient } from '../../adapters/consul/client.js';
import { ConsulRegistry } from '../../adapters/consul/registry.js';
import { silentLogger } from '../../log/logger.js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { ConsulStandin } from '../support/consul-standin.js';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess } from '../support/portolan-process.js';
import { grpcNode, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';
import { TEST_PACING } from './consul-support.js';

interface Registryz {
  registries: {
    name: string;
    status: { synced: boolean; stale: boolean; lastError?: string; incomplete?: string[] };
    debug?: { problems: { source: string; message: string }[] };
    services: { hostname: string; endpoints: unknown[] }[];
  }[];
}

test('a cold start with one failing health query: ready after --consul-sync-timeout with the rest, the failing service named', async (t) => {
  const standin = await ConsulStandin.start({ consulService: false });
  t.after(() => standin.stop());
  standin.register({
    Name: 'web',
    ID: 'web-1',
    Address: '127.0.0.11',
    Port: 8080,
    Meta: { protocol: 'grpc' },
  });
  standin.register({ Name: 'db', ID: 'db-1', Address: '127.0.0.12', Port: 5432 });
  standin.failHealth('db', { status: 500, message: 'rpc error: No cluster leader' });

  const dir = mkdtempSync(join(tmpdir(), 'portolan-consul-partial-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const portolan = await startPortolanProcess([
    '--registries',
    'consul',
    '--data-dir',
    join(dir, 'data'),
    '--consul-addr',
    standin.url,
    '--consul-wait',
    '1s',
    '--consul-sync-timeout',
    '1s',
  ]);
  t.after(async () => {
    await portolan.stop();
  });

  let body = '';
  await eventually(
    async () => {
      const res = await fetch(`${portolan.httpBase}/ready`);
      body = await res.text();
      assert.equal(res.status, 200, body);
    },
    { timeoutMs: 15_000, what: '/ready once the sync wait ran out' },
  );
  assert.match(
    body,
    /^ready; synced in part: consul without db \(health\/service\/db: .*No cluster leader.*\)\n$/,
  );

  const z = (await (await fetch(`${portolan.httpBase}/debug/registryz`)).json()) as Registryz;
  const consul = z.registries.find((r) => r.name === 'consul');
  assert.deepEqual(
    consul?.services.map((s) => s.hostname),
    ['web.service.consul'],
  );
  assert.equal(consul?.status.stale, true);
  assert.match(consul?.status.incomplete?.join() ?? '', /^db \(health\/service\/db: /);
  assert.ok(consul?.debug?.problems.some((p) => p.source === 'unsynced/db'));

  // Streams are served: a client gets the services that synced.
  const client = new RawAdsClient(portolan.xdsAddress);
  t.after(() => client.close());
  client.send({ node: grpcNode('partial-start'), type_url: CLUSTER });
  assert.deepEqual(resourceNames(await client.next(10_000)), ['outbound|8080||web.service.consul']);

  // The failing service answers at last: added, and nothing is missing any more.
  standin.failHealth('db', undefined);
  await eventually(
    async () => {
      const res = await fetch(`${portolan.httpBase}/ready`);
      assert.equal(await res.text(), 'ready\n');
      const after = (await (await fetch(`${portolan.httpBase}/debug/registryz`)).json()) as Registryz;
      const r = after.registries.find((x) => x.name === 'consul');
      assert.deepEqual(r?.services.map((s) => s.hostname).sort(), [
        'db.service.consul',
        'web.service.consul',
      ]);
      assert.equal(r?.status.stale, false);
      assert.equal(r?.status.incomplete, undefined);
    },
    { timeoutMs: 15_000, what: 'db to be added' },
  );
});

test('an empty health answer for a listed service is held for --consul-empty-hold, then applied', async (t) => {
  const standin = await ConsulStandin.start({ consulService: false });
  standin.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.11', Port: 8080 });
  standin.register({ Name: 'web', ID: 'web-2', Address: '127.0.0.12', Port: 8080 });
  const registry = new ConsulRegistry({
    client: createConsulClient({ url: new URL(standin.url), waitMs: 400 }),
    conversion: { domain: 'service.consul', warningHealthy: true, datacenter: 'dc1' },
    logger: silentLogger,
    pacing: TEST_PACING,
    emptyHoldMs: 1500,
  });
  t.after(async () => {
    await registry.stop();
    await standin.stop();
  });
  await registry.start();
  const web = () => registry.snapshot().endpoints.get('web.service.consul')?.length;
  assert.equal(web(), 2);

  standin.emptyHealth('web', true);
  await eventually(() => {
    assert.equal(registry.status().stale, true);
    assert.match(
      registry.status().lastError ?? '',
      /health\/service\/web returned no instances .* keeping the 2 known until /,
    );
  });
  assert.equal(web(), 2, 'held');
  await eventually(
    () => {
      assert.equal(web(), 0);
      assert.equal(registry.status().stale, false);
    },
    { what: 'the hold to run out' },
  );
  assert.ok(registry.snapshot().services.has('web.service.consul'), 'listed, so still a service');

  standin.emptyHealth('web', false);
  await eventually(() => assert.equal(web(), 2), { what: 'the instances to come back' });
});
