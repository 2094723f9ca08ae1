// A control-plane restart under a live @grpc/grpc-js-xds client: `portolan serve` (a child process)
// is stopped while the client keeps calling, the config is edited while no plane runs, and a new
// `portolan serve` on the same directories takes over. The client reaches the plane through a TCP
// relay, which keeps its xDS address while the new plane binds a new ephemeral port (as a VIP or a
// DNS name would). Calls never fail: they go on to the last endpoints the old plane sent, then
// follow the new plane's routing.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { callEcho, startEchoBackend } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess } from '../support/portolan-process.js';
import { startTcpRelay } from '../support/tcp-relay.js';
import { xdsEchoClient } from '../support/xds-client.js';

const HOST = 'echo.restart.internal';

function config(address: string, port: number): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: ${address}, ports: { grpc: ${port} } }]
`;
}

test('across a control-plane restart, calls keep succeeding and then follow the new plane', async (t) => {
  const b1 = await startEchoBackend('b1', '127.0.0.1');
  const b2 = await startEchoBackend('b2', '127.0.0.2', b1.port);
  const dir = mkdtempSync(join(tmpdir(), 'portolan-restart-'));
  const args = [
    '--registries',
    'config',
    '--config-dir',
    join(dir, 'config'),
    '--data-dir',
    join(dir, 'data'),
  ];
  mkdirSync(join(dir, 'config'));
  const configFile = join(dir, 'config', 'echo.yaml');
  writeFileSync(configFile, config(b1.address, b1.port));

  const first = await startPortolanProcess(args);
  const relay = await startTcpRelay(first.xdsAddress);
  const client = xdsEchoClient(`xds:///${HOST}:50051`, relay.address, 'restart-client');
  let second: Awaited<ReturnType<typeof startPortolanProcess>> | undefined;
  t.after(async () => {
    client.close();
    await first.stop();
    await second?.stop();
    await relay.stop();
    await b1.stop();
    await b2.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await eventually(async () => assert.equal(await callEcho(client), 'b1'), { timeoutMs: 15_000 });

  // A caller running throughout: every call's backend, in order, and every failure.
  const reached: string[] = [];
  const failures: string[] = [];
  let calling = true;
  const caller = (async () => {
    while (calling) {
      try {
        reached.push(await callEcho(client, 3000));
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
      }
      await sleep(20);
    }
  })();
  try {
    const exit = await first.stop();
    assert.equal(exit.code, 0, 'the first plane shut down cleanly');
    // No plane: the config changes meanwhile, and calls go on to the endpoints already sent.
    writeFileSync(configFile, config(b2.address, b2.port));
    const whileDown = reached.length;
    await eventually(() => assert.ok(reached.length - whileDown >= 10, 'calls go on without a plane'));
    assert.deepEqual([...new Set(reached.slice(whileDown))], ['b1']);

    second = await startPortolanProcess(args);
    relay.retarget(second.xdsAddress);
    await eventually(() => assert.deepEqual(reached.slice(-10), Array(10).fill('b2')), { timeoutMs: 30_000 });
  } finally {
    calling = false;
    await caller;
  }
  assert.deepEqual(failures, [], 'no call failed');
  const switchAt = reached.indexOf('b2');
  assert.ok(switchAt > 0);
  assert.deepEqual(
    [...new Set(reached.slice(0, switchAt))],
    ['b1'],
    'b1 until the new plane routed elsewhere',
  );
  assert.deepEqual([...new Set(reached.slice(switchAt))], ['b2'], 'then b2 only');
  assert.ok(relay.connections() >= 2, 'the client reconnected its xDS stream');
  assert.ok(second);
  const adsz = (await (await fetch(`${second.httpBase}/debug/adsz`)).json()) as {
    clients: { node: string }[];
  };
  assert.ok(
    adsz.clients.some((c) => c.node === 'restart-client'),
    'the client is connected to the new plane',
  );
});
