// End to end: `portolan serve` as a child process on a temporary config directory, three gRPC Echo
// backends on 127.0.0.x with the same port, and the real @grpc/grpc-js-xds client following edits.
// Each test starts its own control plane on its own directory (three WorkloadEntries: b1, b2, b3),
// so each can run alone; the backends, which hold no state the tests assert on, are shared.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { callEcho, startEchoBackend, type EchoBackend, type EchoClient } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { decodedResources, RawAdsClient, resourceNames } from '../support/raw-ads-client.js';
import { LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { xdsEchoClient } from '../support/xds-client.js';

const HOST = 'echo.e2e.internal';
const TARGET = `xds:///${HOST}:50051`;

const backends = new Map<string, EchoBackend>();

function workloadEntry(name: string, address: string, port: number): string {
  return `apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata:
  name: ${name}
  namespace: default
  labels: { app: echo }
spec:
  address: ${address}
  ports: { grpc: ${port} }
  labels: { app: echo }
  locality: region1/zone1
`;
}

const port = (): number => backends.get('b1')?.port ?? 0;

interface Served {
  readonly dir: string;
  readonly portolan: PortolanProcess;
  readonly client: EchoClient;
  /** The set of backends that answer `calls` consecutive calls. */
  backendsReached(calls?: number): Promise<string[]>;
  getJson(path: string): Promise<{ status: number; body: unknown }>;
}

/**
 * `portolan serve --registries config` on a fresh directory: the echo ServiceEntry and WorkloadEntries
 * echo-1..3 (b1, b2, b3) under workloads/, and a gRPC client of it; all stopped after the test.
 */
async function serve(t: TestContext): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-e2e-'));
  mkdirSync(join(dir, 'workloads'));
  writeFileSync(
    join(dir, 'echo-service.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  ports: [{ number: 50051, name: grpc, protocol: GRPC }]
  resolution: STATIC
  location: MESH_INTERNAL
  workloadSelector: { labels: { app: echo } }
`,
  );
  for (const [i, addr] of ['127.0.0.1', '127.0.0.2', '127.0.0.3'].entries()) {
    writeFileSync(join(dir, 'workloads', `echo-${i + 1}.yaml`), workloadEntry(`echo-${i + 1}`, addr, port()));
  }
  const portolan = await startPortolanProcess([
    '--registries',
    'config',
    '--config-dir',
    dir,
    '--data-dir',
    join(dir, 'data'),
  ]);
  const client = xdsEchoClient(TARGET, portolan.xdsAddress, 'e2e-client');
  t.after(async () => {
    client.close();
    await portolan.stop(); // no-op when the test already stopped it
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    portolan,
    client,
    async backendsReached(calls = 12) {
      const seen = new Set<string>();
      for (let i = 0; i < calls; i++) seen.add(await callEcho(client));
      return [...seen].sort();
    },
    async getJson(path) {
      const res = await fetch(`${portolan.httpBase}${path}`);
      const text = await res.text();
      return {
        status: res.status,
        body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
      };
    },
  };
}

/** Waits until the client reaches the starting set of backends. */
async function reachesAllThree(s: Served): Promise<void> {
  await eventually(async () => assert.deepEqual(await s.backendsReached(), ['b1', 'b2', 'b3']), {
    timeoutMs: 15_000,
  });
}

/** Writes a syntax error into workloads/echo-1.yaml and waits until /debug/configz reports it. */
async function breakEcho1(s: Served) {
  writeFileSync(
    join(s.dir, 'workloads', 'echo-1.yaml'),
    'apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: [oops\n',
  );
  return eventually(async () => {
    const { body } = await s.getJson('/debug/configz');
    const files = (
      body as { files: { path: string; status: string; errors: { line: number; message: string }[] }[] }
    ).files;
    const f = files.find((x) => x.path.endsWith('echo-1.yaml'));
    assert.equal(f?.status, 'error');
    return f;
  });
}

before(async () => {
  const first = await startEchoBackend('b1', '127.0.0.1');
  backends.set('b1', first);
  for (const [name, addr] of [
    ['b2', '127.0.0.2'],
    ['b3', '127.0.0.3'],
    ['b4', '127.0.0.4'],
  ] as const) {
    backends.set(name, await startEchoBackend(name, addr, first.port));
  }
});

after(async () => {
  await Promise.all([...backends.values()].map((b) => b.stop()));
});

test('the control plane reports ready once the config directory is loaded', async (t) => {
  const s = await serve(t);
  const ready = await eventually(async () => {
    const r = await s.getJson('/ready');
    assert.equal(r.status, 200);
    return r;
  });
  assert.match(String(ready.body), /ready/);
});

test('the xDS client reaches every backend of the service', async (t) => {
  await reachesAllThree(await serve(t));
});

test('editing a WorkloadEntry moves the traffic', async (t) => {
  const s = await serve(t);
  await reachesAllThree(s);
  const started = Date.now();
  writeFileSync(
    join(s.dir, 'workloads', 'echo-3.yaml'),
    workloadEntry('echo-3', '127.0.0.4', backends.get('b4')?.port ?? 0),
  );
  await eventually(async () => assert.ok((await s.backendsReached(3)).includes('b4')), { intervalMs: 10 });
  t.diagnostic(`file edit to first call on the new endpoint: ${Date.now() - started} ms`);
  await eventually(async () => assert.deepEqual(await s.backendsReached(), ['b1', 'b2', 'b4']));
});

test('a broken file is reported with its line and the last good version stays in force', async (t) => {
  const s = await serve(t);
  await reachesAllThree(s);
  const file = await breakEcho1(s);
  assert.ok(file && file.errors.length > 0 && file.errors.every((e) => e.line >= 1), JSON.stringify(file));
  assert.deepEqual(await s.backendsReached(), ['b1', 'b2', 'b3']);
});

test('deleting a file removes its endpoints', async (t) => {
  const s = await serve(t);
  await reachesAllThree(s);
  unlinkSync(join(s.dir, 'workloads', 'echo-2.yaml'));
  await eventually(async () => assert.deepEqual(await s.backendsReached(), ['b1', 'b3']));
});

test('/debug/configz lists what gRPC clients cannot render, and unknown subsets, while routing goes on', async (t) => {
  const s = await serve(t);
  await reachesAllThree(s);
  writeFileSync(
    join(s.dir, 'echo-vs.yaml'),
    `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  http:
    - route: [{ destination: { host: ${HOST} } }]
      mirror: { host: ${HOST}, subset: shadow }
`,
  );
  const body = await eventually(async () => {
    const { body } = await s.getJson('/debug/configz');
    const state = body as {
      limitations?: { resource: string; field: string; clients: string[] }[];
      warnings: { resource: { resource: string }; message: string }[];
    };
    assert.deepEqual(
      state.limitations?.map((l) => [l.resource, l.field, l.clients]),
      [['VirtualService/default/echo', 'spec.http[0].mirror', ['grpc']]],
    );
    return state;
  });
  assert.ok(
    body.warnings.some(
      (w) => w.resource.resource === 'VirtualService/default/echo' && /subset "shadow"/.test(w.message),
    ),
    JSON.stringify(body.warnings),
  );
  assert.deepEqual(await s.backendsReached(), ['b1', 'b2', 'b3']);
  unlinkSync(join(s.dir, 'echo-vs.yaml'));
  await eventually(async () => {
    const { body } = await s.getJson('/debug/configz');
    assert.deepEqual((body as { limitations: unknown[] }).limitations, []);
  });
});

test('the admin views show the client and what it was sent', async (t) => {
  const s = await serve(t);
  await reachesAllThree(s);
  const { body } = await s.getJson('/debug/adsz');
  const clients = (
    body as { clients: { node: string; subscriptions: Record<string, { lastNack: unknown }> }[] }
  ).clients;
  const me = clients.find((c) => c.node === 'e2e-client');
  assert.ok(me, JSON.stringify(body));
  assert.deepEqual(Object.keys(me.subscriptions).sort(), ['CDS', 'EDS', 'LDS', 'RDS']);
  for (const sub of Object.values(me.subscriptions)) assert.equal(sub.lastNack, null);

  const dump = await s.getJson('/debug/config_dump?proxyID=e2e-client');
  assert.equal(dump.status, 200);
  assert.match(JSON.stringify(dump.body), /outbound\|50051\|\|echo\.e2e\.internal/);
});

test('/metrics exposes registry state and xDS counters for Prometheus', async (t) => {
  const s = await serve(t);
  await reachesAllThree(s);
  // An endpoint edit (an EDS push), then a broken file (the registry is stale while it is).
  writeFileSync(
    join(s.dir, 'workloads', 'echo-3.yaml'),
    workloadEntry('echo-3', '127.0.0.4', backends.get('b4')?.port ?? 0),
  );
  await eventually(async () => assert.deepEqual(await s.backendsReached(), ['b1', 'b2', 'b4']));
  await breakEcho1(s);
  const { status, body } = await s.getJson('/metrics');
  assert.equal(status, 200);
  const text = String(body);
  assert.match(text, /^portolan_registry_synced\{registry="config"\} 1$/m);
  assert.match(text, /^portolan_registry_stale\{registry="config"\} 1$/m, 'echo-1.yaml is still broken');
  assert.match(text, /^portolan_xds_connected_streams [1-9]\d*$/m);
  assert.match(text, /^portolan_xds_responses_total\{type="EDS"\} [1-9]\d*$/m);
  assert.match(text, /^portolan_xds_pushes_total\{kind="(eds|full)"\} [1-9]\d*$/m);
});

test('a Gateway written into the directory configures an Envoy gateway node', async (t) => {
  const s = await serve(t);
  writeFileSync(
    join(s.dir, 'gateway.yaml'),
    `apiVersion: networking.istio.io/v1
kind: Gateway
metadata: { name: edge, namespace: default }
spec:
  selector: { istio: ingressgateway }
  servers: [{ port: { number: 8443, name: http, protocol: HTTP }, hosts: [echo.example.com] }]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: edge, namespace: default }
spec:
  hosts: [echo.example.com]
  gateways: [edge]
  http: [{ route: [{ destination: { host: ${HOST} } }] }]
`,
  );
  const node = {
    id: 'router~127.0.0.9~edge-1~default.svc',
    user_agent_name: 'envoy',
    metadata: {
      fields: { LABELS: { structValue: { fields: { istio: { stringValue: 'ingressgateway' } } } } },
    },
  };
  const routes = await eventually(
    async () => {
      const client = new RawAdsClient(s.portolan.xdsAddress);
      try {
        client.send({ node, type_url: LISTENER, resource_names: [] });
        const names = resourceNames(await client.next());
        assert.deepEqual(names, ['0.0.0.0_8443']);
        client.send({ type_url: ROUTE, resource_names: ['http.8443'] });
        return JSON.stringify(decodedResources(await client.next()));
      } finally {
        client.close();
      }
    },
    { timeoutMs: 10_000 },
  );
  assert.match(routes, new RegExp(`outbound\\|50051\\|\\|${HOST.replace(/\./g, '\\.')}`));
});

test('SIGTERM shuts down cleanly and exits 0 within the grace period', async (t) => {
  const s = await serve(t);
  await reachesAllThree(s);
  // The client goes first: grpc-js-xds keeps retrying a control plane that went away, holding the process open.
  s.client.close();
  const exit = await s.portolan.stop();
  assert.deepEqual(exit, { code: 0, signal: null, killed: false });
  assert.ok(s.portolan.logs.some((l) => l.msg === 'shutting down' && l.signal === 'SIGTERM'));
});
