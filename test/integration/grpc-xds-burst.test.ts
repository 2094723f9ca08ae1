// The real @grpc/grpc-js-xds client keeps working across a burst of 200 changes (endpoint flips and
// services coming and going), ends on the final state, and never NACKs.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { callEcho, startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { startAdsTap, type AdsTap } from '../support/ads-tap.js';
import { xdsEchoClient } from '../support/xds-client.js';

const HOST = 'echo.mock.internal';

let plane: InProcessPlane;
let tap: AdsTap;
const backends: EchoBackend[] = [];

before(async () => {
  plane = await startInProcessPlane({ pushWindowMs: 20 });
  tap = await startAdsTap(plane.address);
  const first = await startEchoBackend('b1', '127.0.0.1');
  backends.push(first, await startEchoBackend('b2', '127.0.0.2', first.port));
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 7070)]));
  plane.mock.setEndpoints(
    HOST,
    backends.map((b) => endpoint(b.address, { grpc: b.port })),
  );
});

after(async () => {
  tap.stop();
  await plane.stop();
  await Promise.all(backends.map((b) => b.stop()));
});

test('a proxyless gRPC client follows a burst of 200 changes to the final state without a NACK', async () => {
  const client = xdsEchoClient(`xds:///${HOST}:7070`, tap.address, 'grpc-burst');
  try {
    await eventually(async () => assert.ok(await callEcho(client)));
    const [b1, b2] = backends;
    assert.ok(b1 && b2);
    const pushesBefore = plane.ads.pushes;
    for (let i = 0; i < 200; i++) {
      if (i % 4 === 3) {
        const other = `other-${i}.mock.internal`;
        plane.mock.putService(mockService(other, [servicePort('grpc', 7070)]));
        plane.mock.setEndpoints(other, [endpoint('127.0.0.3', { grpc: 9000 })]);
      } else {
        const to = i % 2 === 0 ? b1 : b2;
        plane.mock.setEndpoints(HOST, [endpoint(to.address, { grpc: to.port })]);
      }
      if (i % 10 === 0) await sleep(15);
    }
    plane.mock.setEndpoints(HOST, [endpoint(b2.address, { grpc: b2.port })]);
    await eventually(async () => {
      const got = new Set<string>();
      for (let i = 0; i < 6; i++) got.add(await callEcho(client));
      assert.deepEqual([...got], ['b2']);
    });
    assert.ok(plane.ads.pushes - pushesBefore < 200, 'changes were merged into fewer pushes');

    const conn = plane.ads.connectionList().find((c) => c.proxy?.id === 'grpc-burst');
    assert.ok(conn, 'the client has a stream');
    await eventually(() => {
      for (const type of conn.state.watchedTypes()) {
        const s = conn.state.typeState(type);
        assert.equal(s?.ackedVersion, s?.sent?.version, `${type} acked`);
      }
    });
    assert.ok(tap.requests() > 4, 'the client spoke through the tap');
    assert.deepEqual(tap.nacks, [], 'no NACK at any point of the burst');
  } finally {
    client.close();
  }
});
