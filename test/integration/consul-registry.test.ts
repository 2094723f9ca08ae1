// Consul changes reach xDS clients: registration, deregistration, health, tags and meta, each made
// through the stand-in's HTTP API (as a Consul agent receives them) and observed on a raw ADS stream.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Consul from 'consul';
import { addresses, clusterOf, startConsulPlane, XdsRecorder } from './consul-support.js';
import { eventually } from '../support/eventually.js';

const WEB = clusterOf('web', 8080);

async function put(url: string, body?: unknown): Promise<void> {
  const res = await fetch(url, { method: 'PUT', ...(body !== undefined && { body: JSON.stringify(body) }) });
  assert.equal(res.status, 200, await res.text());
}

function agent(url: string): Consul {
  return new Consul({ host: '127.0.0.1', port: Number(new URL(url).port) });
}

test('registration and deregistration through the agent API reach EDS; the last instance leaving removes the cluster', async (t) => {
  const { standin, plane } = await startConsulPlane(t, {
    seed: (s) => s.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.11', Port: 8080 }),
  });
  const consul = agent(standin.url);
  t.after(() => consul.destroy());
  const xds = await XdsRecorder.connect(plane.address, 'reg-1', [WEB]);
  t.after(() => xds.close());
  await xds.waitFor(WEB, (e) => e.length === 1);

  await consul.agent.service.register({
    name: 'web',
    id: 'web-2',
    address: '127.0.0.12',
    port: 8080,
    check: { name: 'ttl', ttl: '30s', timeout: '1s', status: 'passing' },
  });
  assert.deepEqual(addresses(await xds.waitFor(WEB, (e) => e.length === 2)), ['127.0.0.11', '127.0.0.12']);

  await consul.agent.service.deregister('web-1');
  assert.deepEqual(addresses(await xds.waitFor(WEB, (e) => e.length === 1)), ['127.0.0.12']);

  await consul.agent.service.deregister('web-2');
  await eventually(() => {
    const cds = xds.seen.filter((s) => s.type === 'CDS').at(-1);
    assert.equal(cds?.clusters.has(WEB), false, 'the cluster is gone once the service is');
  });
});

test('health: critical and maintenance are UNHEALTHY (kept in EDS), warning stays HEALTHY, passing returns', async (t) => {
  const { standin, plane } = await startConsulPlane(t, {
    seed: (s) => {
      s.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.11', Port: 8080 });
      s.register({ Name: 'web', ID: 'web-2', Address: '127.0.0.12', Port: 8080 });
    },
  });
  const consul = agent(standin.url);
  t.after(() => consul.destroy());
  const xds = await XdsRecorder.connect(plane.address, 'health-1', [WEB]);
  t.after(() => xds.close());
  const healthOf = (address: string) => (e: readonly { address: string; health: string }[]) =>
    e.find((x) => x.address === address)?.health;

  await consul.agent.check.fail('service:web-1');
  let eps = await xds.waitFor(WEB, (e) => healthOf('127.0.0.11')(e) === 'UNHEALTHY');
  assert.equal(eps.length, 2, 'an unhealthy instance stays in view');
  assert.equal(healthOf('127.0.0.12')(eps), 'HEALTHY');

  await consul.agent.check.warn('service:web-1');
  await xds.waitFor(WEB, (e) => healthOf('127.0.0.11')(e) === 'HEALTHY');

  await consul.agent.service.maintenance({ id: 'web-2', enable: true, reason: 'deploy' });
  eps = await xds.waitFor(WEB, (e) => healthOf('127.0.0.12')(e) === 'UNHEALTHY');
  assert.equal(eps.length, 2);

  await consul.agent.service.maintenance({ id: 'web-2', enable: false });
  await consul.agent.check.pass('service:web-1');
  await xds.waitFor(WEB, (e) => e.every((x) => x.health === 'HEALTHY'));

  // A node-level check (serfHealth) failing takes every instance on that node out.
  standin.setCheck('serfHealth', 'critical');
  await xds.waitFor(WEB, (e) => e.every((x) => x.health === 'UNHEALTHY'));
});

test('tag and meta changes update labels; a protocol change re-types the port; weights follow Weights', async (t) => {
  const { standin, plane, registry } = await startConsulPlane(t, {
    seed: (s) =>
      s.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.11', Port: 8080, Tags: ['version=v1'] }),
  });
  const xds = await XdsRecorder.connect(plane.address, 'tags-1', [WEB]);
  t.after(() => xds.close());
  await xds.waitFor(WEB, (e) => e.length === 1);
  const labels = () => registry.snapshot().endpoints.get('web.service.consul')?.[0]?.labels;
  assert.deepEqual(labels(), { version: 'v1' });

  await put(`${standin.url}/v1/agent/service/register`, {
    ID: 'web-1',
    Name: 'web',
    Address: '127.0.0.11',
    Port: 8080,
    Tags: ['version=v2', 'track|canary'],
    Meta: { team: 'payments', protocol: 'grpc' },
    Weights: { Passing: 7, Warning: 1 },
  });
  await eventually(() =>
    assert.deepEqual(labels(), { protocol: 'grpc', team: 'payments', track: 'canary', version: 'v2' }),
  );
  assert.deepEqual(registry.snapshot().services.get('web.service.consul')?.ports, [
    { name: 'grpc-8080', number: 8080, protocol: 'GRPC' },
  ]);
  const [weighted] = await xds.waitFor(WEB, (e) => e[0]?.weight === 7);
  assert.equal(weighted?.address, '127.0.0.11');
});
