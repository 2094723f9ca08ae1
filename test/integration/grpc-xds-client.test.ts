// The real @grpc/grpc-js-xds client against the ADS server, fed by the mock registry; an ADS tap
// between them records any NACK the client sends.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
  plane = await startInProcessPlane();
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

test('a proxyless gRPC client reaches every backend and follows endpoint changes', async () => {
  const client = xdsEchoClient(`xds:///${HOST}:7070`, tap.address, 'grpc-client-1');
  try {
    const seen = new Set<string>();
    await eventually(async () => {
      seen.add(await callEcho(client));
      assert.deepEqual([...seen].sort(), ['b1', 'b2']);
    });

    const b2 = backends[1];
    assert.ok(b2);
    plane.mock.setEndpoints(HOST, [endpoint(b2.address, { grpc: b2.port })]);
    await eventually(async () => {
      const got = new Set<string>();
      for (let i = 0; i < 6; i++) got.add(await callEcho(client));
      assert.deepEqual([...got], ['b2']);
    });

    const conn = plane.ads.connectionList().find((c) => c.proxy?.id === 'grpc-client-1');
    assert.ok(conn, 'the client has a stream');
    await eventually(() => {
      for (const type of conn.state.watchedTypes()) {
        const s = conn.state.typeState(type);
        assert.equal(s?.ackedVersion, s?.sent?.version, `${type} acked`);
      }
    });
    assert.deepEqual(tap.nacks, [], 'no NACK at any point');
  } finally {
    client.close();
  }
});
