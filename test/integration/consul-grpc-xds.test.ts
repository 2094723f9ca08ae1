// End to end with the real @grpc/grpc-js-xds client: it follows a Consul change (never NACKing, as
// an ADS tap between it and the plane records), and keeps calling through a Consul outage on the
// last good endpoints.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Consul from 'consul';
import { callEcho, startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startAdsTap } from '../support/ads-tap.js';
import { xdsEchoClient } from '../support/xds-client.js';
import { startConsulPlane } from './consul-support.js';

async function backends(t: { after(fn: () => Promise<void>): void }): Promise<[EchoBackend, EchoBackend]> {
  const b1 = await startEchoBackend('b1', '127.0.0.1');
  const b2 = await startEchoBackend('b2', '127.0.0.2', b1.port);
  t.after(async () => {
    await b1.stop();
    await b2.stop();
  });
  return [b1, b2];
}

async function reached(client: Parameters<typeof callEcho>[0], calls = 8): Promise<string[]> {
  const seen = new Set<string>();
  for (let i = 0; i < calls; i++) seen.add(await callEcho(client));
  return [...seen].sort();
}

test('a proxyless gRPC client follows Consul: a new instance, then the old one failing its check', async (t) => {
  const [b1, b2] = await backends(t);
  const { standin, plane } = await startConsulPlane(t, {
    seed: (s) =>
      s.register({
        Name: 'echo',
        ID: 'echo-1',
        Address: b1.address,
        Port: b1.port,
        Meta: { protocol: 'grpc' },
      }),
  });
  const consul = new Consul({ host: '127.0.0.1', port: Number(new URL(standin.url).port) });
  t.after(() => consul.destroy());
  const tap = await startAdsTap(plane.address);
  t.after(() => tap.stop());
  const client = xdsEchoClient(`xds:///echo.service.consul:${b1.port}`, tap.address, 'consul-grpc-1');
  t.after(() => client.close());

  await eventually(async () => assert.deepEqual(await reached(client), ['b1']));

  await consul.agent.service.register({
    name: 'echo',
    id: 'echo-2',
    address: b2.address,
    port: b2.port,
    meta: { protocol: 'grpc' },
    check: { name: 'ttl', ttl: '30s', timeout: '1s', status: 'passing' },
  });
  await eventually(async () => assert.deepEqual(await reached(client), ['b1', 'b2']));

  await consul.agent.check.fail('service:echo-1');
  await eventually(async () => assert.deepEqual(await reached(client), ['b2']));

  assert.ok(tap.requests() > 4, 'the client spoke through the tap');
  assert.deepEqual(tap.nacks, [], 'no NACK at any point');
});

test('while Consul is unreachable, calls keep succeeding on the last good endpoints', async (t) => {
  const [b1, b2] = await backends(t);
  const { standin, plane, registry } = await startConsulPlane(t, {
    seed: (s) => {
      for (const b of [b1, b2])
        s.register({
          Name: 'echo',
          ID: b.name,
          Address: b.address,
          Port: b.port,
          Meta: { protocol: 'grpc' },
        });
    },
  });
  const client = xdsEchoClient(`xds:///echo.service.consul:${b1.port}`, plane.address, 'consul-grpc-2');
  t.after(() => client.close());
  await eventually(async () => assert.deepEqual(await reached(client), ['b1', 'b2']));

  await standin.refuseConnections();
  const deadline = Date.now() + 2000;
  const seen = new Set<string>();
  let calls = 0;
  while (Date.now() < deadline) {
    seen.add(await callEcho(client, 2000)); // any failure rejects and fails the test
    calls++;
    await sleep(25);
  }
  assert.equal(registry.status().stale, true);
  assert.deepEqual([...seen].sort(), ['b1', 'b2']);
  assert.ok(calls > 20);
  await standin.acceptConnections();
  await eventually(() => assert.equal(registry.status().stale, false));
});
