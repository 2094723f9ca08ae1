// gRPC C-core (C++/Python/Ruby/PHP) as a proxyless xDS client: stricter than grpc-js-xds, so our
// resources must follow the gRFCs to the letter for these calls to succeed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Endpoint } from '../../model/endpoint.js';
import { ccoreEchoCalls } from '../support/ccore-client.js';
import { startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';

const HOST = 'echo.ccore.internal';
let plane: InProcessPlane;
const backends: EchoBackend[] = [];

function endpoint(b: EchoBackend, zone: string): Endpoint {
  return {
    address: b.address,
    ports: { grpc: b.port },
    labels: {},
    locality: { region: 'r1', zone, subzone: '' },
    weight: 1,
    health: 'HEALTHY',
    serviceAccount: '',
    network: '',
  };
}

before(async () => {
  plane = await startInProcessPlane();
  const first = await startEchoBackend('c1', '127.0.0.1');
  backends.push(first, await startEchoBackend('c2', '127.0.0.3', first.port));
  plane.mock.putService({
    hostname: HOST,
    namespace: 'default',
    ports: [{ name: 'grpc', number: 9090, protocol: 'GRPC' }],
    addresses: [],
    resolution: 'STATIC',
    labels: {},
    location: 'MESH_INTERNAL',
  });
  // Two localities: C-core drops a locality without a weight, so both must carry one.
  plane.mock.setEndpoints(HOST, [endpoint(first, 'z1'), endpoint(backends[1] as EchoBackend, 'z2')]);
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
