// `portolan serve --registries consul` as a child process beside the stand-in Consul: the flags
// reach the registry, /ready waits for the first full sync, and a Consul outage shows as stale in
// /debug/registryz and /metrics while the last good state stays served.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConsulStandin } from '../support/consul-standin.js';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess } from '../support/portolan-process.js';

interface Registryz {
  registries: {
    name: string;
    status: { synced: boolean; stale: boolean; lastError?: string };
    debug?: { settings: Record<string, unknown> };
    services: { hostname: string; endpoints: unknown[] }[];
  }[];
}

async function getJson<T>(url: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as T };
}

test('portolan serve --registries consul: ready after the first sync, stale (not empty) while Consul is down', async (t) => {
  const standin = await ConsulStandin.start({ aclToken: 'secret-token' });
  t.after(() => standin.stop());
  standin.register({
    Name: 'web',
    ID: 'web-1',
    Address: '127.0.0.11',
    Port: 8080,
    Meta: { protocol: 'grpc' },
  });
  await standin.refuseConnections(); // down when Portolan starts

  const dir = mkdtempSync(join(tmpdir(), 'portolan-consul-serve-'));
  const portolan = await startPortolanProcess([
    '--registries',
    'consul',
    '--config-dir',
    dir,
    '--data-dir',
    join(dir, 'data'),
    '--consul-addr',
    standin.url,
    '--consul-token',
    'secret-token',
    '--consul-datacenter',
    'dc1',
    '--consul-wait',
    '1s',
  ]);
  t.after(async () => {
    await portolan.stop();
  });

  const notReady = await fetch(`${portolan.httpBase}/ready`);
  assert.equal(notReady.status, 503, 'not ready before the first sync');
  await notReady.text();

  await standin.acceptConnections();
  await eventually(async () => assert.equal((await fetch(`${portolan.httpBase}/ready`)).status, 200), {
    timeoutMs: 15_000,
  });
  const { body } = await getJson<Registryz>(`${portolan.httpBase}/debug/registryz`);
  const consul = body.registries.find((r) => r.name === 'consul');
  assert.ok(consul);
  assert.deepEqual(consul.services.map((s) => s.hostname).sort(), [
    'consul.service.consul',
    'web.service.consul',
  ]);
  assert.equal(consul.debug?.settings.token, 'set');
  assert.equal(JSON.stringify(body).includes('secret-token'), false, 'the token is never shown');

  await standin.refuseConnections();
  await eventually(
    async () => {
      const { body: during } = await getJson<Registryz>(`${portolan.httpBase}/debug/registryz`);
      const r = during.registries.find((x) => x.name === 'consul');
      assert.equal(r?.status.stale, true);
      assert.match(r?.status.lastError ?? '', /ECONNREFUSED|ECONNRESET|socket hang up/);
      assert.equal(r?.services.find((s) => s.hostname === 'web.service.consul')?.endpoints.length, 1);
    },
    { timeoutMs: 10_000 },
  );
  const metrics = await (await fetch(`${portolan.httpBase}/metrics`)).text();
  assert.match(metrics, /portolan_registry_stale\{registry="consul"\} 1/);
  assert.match(metrics, /portolan_registry_endpoints\{registry="consul"\} 2/);
  assert.equal(
    (await fetch(`${portolan.httpBase}/ready`)).status,
    200,
    'still ready: serving the last good state',
  );

  await standin.acceptConnections();
  await eventually(
    async () => {
      const { body: after } = await getJson<Registryz>(`${portolan.httpBase}/debug/registryz`);
      assert.equal(after.registries.find((x) => x.name === 'consul')?.status.stale, false);
    },
    { timeoutMs: 10_000 },
  );
});

test('portolan serve rejects a bad --consul-* flag with exit code 2 and the reason', async () => {
  await assert.rejects(
    startPortolanProcess(['--registries', 'consul', '--consul-addr', 'ftp://x:1', '--data-dir', tmpdir()]),
    /exited with 2 .*--consul-addr: use http:\/\/ or https:\/\//,
  );
});
