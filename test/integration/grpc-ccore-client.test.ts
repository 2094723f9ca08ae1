// gRPC C-core (C++/Python/Ruby/PHP) as a proxyless xDS client: stricter than grpc-js-xds, so our
// resources must follow the gRFCs to the letter for these calls to succeed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ccoreEchoCalls } from '../support/ccore-client.js';
import { startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';

const HOST = 'echo.ccore.internal';
let plane: InProcessPlane;
const backends: EchoBackend[] = [];

before(async () => {
  plane = await startInProcessPlane();
  const first = await startEchoBackend('c1', '127.0.0.1');
  backends.push(first, await startEchoBackend('c2', '127.0.0.3', first.port));
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 9090)]));
  // Two localities: C-core drops a locality without a weight, so both must carry one.
  const zoned = (b: EchoBackend, zone: string) =>
    endpoint(b.address, { grpc: b.port }, { locality: { region: 'r1', zone, subzone: '' } });
  plane.mock.setEndpoints(HOST, [zoned(first, 'z1'), zoned(backends[1] as EchoBackend, 'z2')]);
});

after(async () => {
  await plane.stop();
  await Promise.all(backends.map((b) => b.stop()));
});

test('C-core accepts LDS, RDS, CDS and EDS and reaches both backends', async () => {
  const results = await ccoreEchoCalls(`xds:///${HOST}:9090`, plane.address, 'ccore-client-1', 12);
  const failures = results.filter((r) => !r.ok);
  assert.deepEqual(failures, [], 'every call succeeds');
  assert.deepEqual([...new Set(results.map((r) => r.backend))].sort(), ['c1', 'c2']);
});
