// Istio's meaning, observed by the real @grpc/grpc-js-xds client through the config directory: two
// DestinationRules for the echo service (teams splitting one rule) merge as Istio merges them — the
// second's subset v2 is routable, the first's v1 wins over the second's v1 of the same name — and a
// route to an undefined subset or an unknown host fails its calls UNAVAILABLE at once (BlackHoleCluster)
// while every other route works, the client NACKing nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  callEchoWith,
  startEchoBackend,
  type EchoBackend,
  type EchoClient,
} from '../support/echo-backend.js';
import { startAdsTap, type AdsTap } from '../support/ads-tap.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { xdsEchoClient } from '../support/xds-client.js';

const HOST = 'echo.semantics.internal';

function service(port: number): string {
  return `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ name: grpc, number: 50051, protocol: GRPC }]
  workloadSelector: { labels: { app: echo } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: echo-v1, namespace: default }
spec: { address: 127.0.0.1, labels: { app: echo, version: v1 }, ports: { grpc: ${port} } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: echo-v2, namespace: default }
spec: { address: 127.0.0.2, labels: { app: echo, version: v2 }, ports: { grpc: ${port} } }
`;
}

// Two files, one rule each, for the same host: a-*.yaml is read first, so its v1 is the one kept.
const RULE_V1 = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: echo-v1, namespace: default }
spec:
  host: ${HOST}
  subsets: [{ name: v1, labels: { version: v1 } }]
`;
const RULE_V2 = `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: echo-v2, namespace: default }
spec:
  host: ${HOST}
  subsets:
    - { name: v1, labels: { version: v2 } }
    - { name: v2, labels: { version: v2 } }
`;

const ROUTES = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  http:
    - match: [{ headers: { to: { exact: v1 } } }]
      route: [{ destination: { host: ${HOST}, subset: v1 } }]
    - match: [{ headers: { to: { exact: v2 } } }]
      route: [{ destination: { host: ${HOST}, subset: v2 } }]
    - match: [{ headers: { to: { exact: v9 } } }]
      route: [{ destination: { host: ${HOST}, subset: v9 } }]
    - match: [{ headers: { to: { exact: ghost } } }]
      route: [{ destination: { host: ghost.semantics.internal } }]
    - route: [{ destination: { host: ${HOST}, subset: v1 } }]
`;

let dir: string;
let plane: InProcessPlane;
let tap: AdsTap;
let client: EchoClient;
const backends: EchoBackend[] = [];

before(async () => {
  const v1 = await startEchoBackend('v1', '127.0.0.1');
  backends.push(v1, await startEchoBackend('v2', '127.0.0.2', v1.port));
  dir = mkdtempSync(join(tmpdir(), 'portolan-semantics-'));
  writeFileSync(join(dir, 'echo-service.yaml'), service(v1.port));
  writeFileSync(join(dir, 'a-echo-v1.yaml'), RULE_V1);
  writeFileSync(join(dir, 'b-echo-v2.yaml'), RULE_V2);
  writeFileSync(join(dir, 'echo-vs.yaml'), ROUTES);
  plane = await startInProcessPlane({ configDir: dir });
  tap = await startAdsTap(plane.address);
  client = xdsEchoClient(`xds:///${HOST}:50051`, tap.address, 'semantics-e2e');
});

after(async () => {
  client?.close();
  tap?.stop();
  await plane?.stop();
  await Promise.all(backends.map((b) => b.stop()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function backendFor(to: string): Promise<string> {
  const r = await callEchoWith(client, { to });
  if ('error' in r) throw r.error;
  return r.backend;
}

test('merged DestinationRules: the second rule’s subset routes, the first rule’s v1 wins', async () => {
  assert.equal(await eventually(() => backendFor('v2'), { timeoutMs: 15_000 }), 'v2');
  for (let i = 0; i < 6; i++) assert.equal(await backendFor('v1'), 'v1', 'v1 is the first rule’s');
  assert.deepEqual(tap.nacks, []);
});

test('a route to an undefined subset or an unknown host fails UNAVAILABLE, the others still work', async () => {
  await eventually(() => backendFor('v2'), { timeoutMs: 15_000 });
  for (const to of ['v9', 'ghost']) {
    const r = await callEchoWith(client, { to }, 10_000);
    assert.ok('error' in r, `${to}: the call fails`);
    assert.equal(r.error.code, grpc.status.UNAVAILABLE, `${to}: ${r.error.details}`);
  }
  assert.equal(await backendFor('anything'), 'v1');
  assert.deepEqual(tap.nacks, []);
});
