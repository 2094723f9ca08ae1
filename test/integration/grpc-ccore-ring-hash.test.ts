// A config that crashes a known client (issue #17, item 12): gRPC C-core 1.51 (Debian's
// python3-grpcio) segfaults as soon as it receives a RING_HASH cluster (grpc/grpc#31766). With a
// DestinationRule consistentHash, C-core is sent ROUND_ROBIN by the client-capabilities table and its
// calls succeed, while grpc-js still gets RING_HASH; /debug/adsz and /debug/configz say so.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { adsz } from '../../admin/debug-views.js';
import { decodeAny } from '../../xds/proto/protos.js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { trafficLimitations } from '../../xds/traffic/limitations.js';
import { ccoreEchoCalls } from '../support/ccore-client.js';
import { callEcho, startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { xdsEchoClient } from '../support/xds-client.js';

const HOST = 'echo.ccore-hash.internal';
const TARGET = `xds:///${HOST}:50051`;
const CLUSTER_NAME = `outbound|50051||${HOST}`;
let dir: string;
let plane: InProcessPlane;
const backends: EchoBackend[] = [];

const workload = (name: string, address: string, port: number): string => `---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: ${name}, namespace: default }
spec: { address: ${address}, ports: { grpc: ${port} }, labels: { app: echo } }
`;

before(async () => {
  const b1 = await startEchoBackend('b1', '127.0.0.1');
  backends.push(b1, await startEchoBackend('b2', '127.0.0.2', b1.port));
  dir = mkdtempSync(join(tmpdir(), 'portolan-ccore-hash-'));
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
${workload('echo-1', '127.0.0.1', b1.port)}${workload('echo-2', '127.0.0.2', b1.port)}---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: ${HOST}
  trafficPolicy: { loadBalancer: { consistentHash: { httpHeaderName: x-user } } }
`,
  );
  plane = await startInProcessPlane({ configDir: dir });
  await eventually(() => plane.config?.debugState().files.every((f) => f.status === 'ok'));
});

after(async () => {
  await plane?.stop();
  await Promise.all(backends.map((b) => b.stop()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The lb_policy of the cluster last sent to the stream of node `id`. */
function lbPolicySentTo(id: string): unknown {
  const stream = plane.ads.streamList().find((s) => s.proxy?.id === id);
  const cluster = stream?.heldResources(CLUSTER).find((r) => r.name === CLUSTER_NAME);
  return cluster && (decodeAny(cluster.typeUrl, cluster.value) as { lb_policy?: unknown }).lb_policy;
}

test('gRPC C-core 1.51 calls a consistentHash service without crashing: it is sent ROUND_ROBIN', async () => {
  // Before the client-capabilities table, the C-core process died with SIGSEGV on its first call.
  const results = await ccoreEchoCalls(TARGET, plane.address, 'ccore-hash-1', 10);
  assert.deepEqual(
    results.filter((r) => !r.ok),
    [],
    'every call succeeds',
  );
  assert.equal(results.length, 10);
});

test('grpc-js still gets RING_HASH; C-core’s cluster is ROUND_ROBIN; /debug/adsz names the rule for C-core', async () => {
  const client = xdsEchoClient(TARGET, plane.address, 'grpc-js-hash');
  try {
    assert.match(await eventually(() => callEcho(client)), /^b[12]$/);
    assert.equal(lbPolicySentTo('grpc-js-hash'), 'RING_HASH');
    // A C-core client stays connected for the length of its calls: look while it is.
    const calls = ccoreEchoCalls(TARGET, plane.address, 'ccore-hash-2', 40);
    const view = await eventually(() => {
      const v = adsz(plane.ads) as {
        clients: { node: string; userAgent: string; clientRules: { id: string }[] }[];
      };
      const ccore = v.clients.find((c) => c.node === 'ccore-hash-2');
      return ccore && lbPolicySentTo('ccore-hash-2') === 'ROUND_ROBIN' ? { v, ccore } : false;
    });
    assert.match(view.ccore.userAgent, /^gRPC C-core/);
    assert.ok(view.ccore.clientRules.some((r) => r.id === 'ccore-ring-hash-crash'));
    const js = view.v.clients.find((c) => c.node === 'grpc-js-hash');
    assert.ok(js && !js.clientRules.some((r) => r.id === 'ccore-ring-hash-crash'));
    assert.deepEqual(
      (await calls).filter((r) => !r.ok),
      [],
    );
  } finally {
    client.close();
  }
});

test('/debug/configz lists the consistentHash field as given differently to C-core 1.50–1.51', () => {
  const limits = plane.config ? trafficLimitations(plane.config.meshConfig()) : [];
  const entry = limits.find((l) => l.rule === 'ccore-ring-hash-crash');
  assert.deepEqual(entry && [entry.resource, entry.field, entry.clients], [
    'DestinationRule/default/echo',
    'spec.trafficPolicy.loadBalancer.consistentHash',
    ['grpc'],
  ]);
  assert.match(entry?.reason ?? '', /C-core 1\.50 and 1\.51.*ROUND_ROBIN.*grpc\/grpc#31766/);
});
