// gRPC C-core (stricter than grpc-js-xds) against a VirtualService using every field Portolan renders
// for gRPC clients: header matchers of each kind, a weighted split over subset clusters, a retry
// policy, a timeout and a per-route fault. C-core must accept every resource and follow the routes
// (a NACKed listener or route configuration leaves it no route, and every call fails), and an
// injected abort must come back as the configured status.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ccoreEchoCalls } from '../support/ccore-client.js';
import { startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';

const HOST = 'echo.ccore-traffic.internal';
const TARGET = `xds:///${HOST}:50051`;
let dir: string;
let plane: InProcessPlane;
const backends: EchoBackend[] = [];

const workload = (name: string, address: string, port: number, version: string): string => `---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: ${name}, namespace: default }
spec: { address: ${address}, ports: { grpc: ${port} }, labels: { app: echo, version: ${version} } }
`;

function virtualService(fault: string): string {
  return `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  http:
    - match:
        - headers: { x-a: { exact: "1" } }
        - headers: { x-b: { prefix: "p" } }
        - headers: { x-c: { regex: "[a-z]+[0-9]?" } }
        - headers: { x-d: {} }
          withoutHeaders: { x-e: {} }
        - uri: { regex: "/portolan\\\\.test\\\\.Echo/.*" }
          headers: { x-f: { exact: "1" } }
      route: [{ destination: { host: ${HOST}, subset: v2 } }]
    - route:
        - { destination: { host: ${HOST}, subset: v1 }, weight: 50 }
        - { destination: { host: ${HOST}, subset: v2 }, weight: 50 }
      timeout: 5s
      retries: { attempts: 2, retryOn: "unavailable,cancelled,5xx" }
${fault}`;
}

before(async () => {
  const v1 = await startEchoBackend('v1', '127.0.0.1');
  backends.push(v1, await startEchoBackend('v2', '127.0.0.2', v1.port));
  dir = mkdtempSync(join(tmpdir(), 'portolan-ccore-traffic-'));
  writeFileSync(
    join(dir, 'echo.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  workloadSelector: { labels: { app: echo } }
${workload('echo-v1', '127.0.0.1', v1.port, 'v1')}${workload('echo-v2', '127.0.0.2', v1.port, 'v2')}---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: ${HOST}
  subsets: [{ name: v1, labels: { version: v1 } }, { name: v2, labels: { version: v2 } }]
`,
  );
  writeFileSync(
    join(dir, 'vs.yaml'),
    virtualService('      fault: { delay: { fixedDelay: 1ms, percentage: { value: 50 } } }\n'),
  );
  plane = await startInProcessPlane({ configDir: dir });
  await eventually(() =>
    assert.equal(
      plane.config?.debugState().files.every((f) => f.status === 'ok'),
      true,
    ),
  );
});

after(async () => {
  await plane?.stop();
  await Promise.all(backends.map((b) => b.stop()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('C-core accepts header matchers, subset splits, retries, timeout and fault config, and splits calls', async () => {
  const results = await ccoreEchoCalls(TARGET, plane.address, 'ccore-traffic-1', 30);
  assert.deepEqual(
    results.filter((r) => !r.ok),
    [],
    'every call succeeds',
  );
  assert.deepEqual([...new Set(results.map((r) => r.backend))].sort(), ['v1', 'v2']);
});

test('C-core applies an injected abort with the configured status', async () => {
  writeFileSync(
    join(dir, 'vs.yaml'),
    virtualService('      fault: { abort: { grpcStatus: RESOURCE_EXHAUSTED } }\n'),
  );
  await plane.config?.settled();
  const results = await ccoreEchoCalls(TARGET, plane.address, 'ccore-traffic-2', 5);
  assert.deepEqual(
    results.map((r) => r.code),
    Array(5).fill('RESOURCE_EXHAUSTED'),
  );
});
