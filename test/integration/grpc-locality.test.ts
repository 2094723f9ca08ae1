// Locality load balancing end to end, with the real proxyless clients (@grpc/grpc-js-xds in this
// process, gRPC C-core through Debian's python3-grpcio): echo backends in two regions, clients in
// the first, and the DestinationRules of examples/traffic/locality-*.yaml loaded verbatim from a
// watched config directory. Failover: every call stays in the client's locality; when that
// backend stops, calls move to the other region; when it comes back, so do the calls (the failed
// calls of each move are counted and reported). Distribute: 80/20 over 1,000 calls. Without
// outlier detection, `failover` gives no priorities and /debug/configz says so.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { CallResult, CallStream } from '../support/call-stream.js';
import { ccoreEchoCalls, startCcoreEchoStream } from '../support/ccore-client.js';
import { startGrpcJsEchoStream } from '../support/grpc-js-stream.js';
import { startEchoBackend, type EchoBackend, type EchoClient } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { xdsEchoClient, type NodeOptions } from '../support/xds-client.js';
import { trafficLimitations } from '../../xds/traffic/limitations.js';

/** The examples' service: their DestinationRules name this host. */
const HOST = 'echo.example.internal';
const TARGET = `xds:///${HOST}:50051`;
const EAST = { region: 'us-east', zone: 'us-east-1a', subzone: '' };
const WEST = { region: 'us-west', zone: 'us-west-2a', subzone: '' };
/** The clients run in us-east/us-east-1a, beside the east backend. */
const CLIENT: NodeOptions = { locality: { region: EAST.region, zone: EAST.zone } };
/** Calls of the distribute test, per client: 80/20 has a standard deviation of 1.26 points there. */
const DISTRIBUTE_CALLS = 1000;
/** Consecutive calls on one backend that count as "every call goes there now". */
const STEADY = 40;

let plane: InProcessPlane;
let dir: string;
let port: number;
const backends = new Map<string, EchoBackend>();

function repoRoot(): string {
  for (let d = dirname(fileURLToPath(import.meta.url)); d !== dirname(d); d = dirname(d))
    if (existsSync(join(d, 'examples', 'traffic'))) return d;
  return resolve('.');
}

/** Puts an example file in the config directory (as echo-locality.yaml) and waits until it is in force. */
async function useExample(file: string): Promise<void> {
  await useRule(readFileSync(join(repoRoot(), 'examples', 'traffic', file), 'utf8'), file);
}

async function useRule(text: string, what: string): Promise<void> {
  const config = plane.config ?? assert.fail('config registry');
  const path = join(dir, 'echo-locality.yaml');
  if (existsSync(path) && readFileSync(path, 'utf8') === text) return; // already in force
  const before = config.meshConfig().generation;
  await writeFile(path, text);
  await eventually(() => {
    assert.ok(config.meshConfig().generation > before, `${what} is in force`);
    assert.equal(config.debugState().files.find((f) => f.path === 'echo-locality.yaml')?.status, 'ok');
  });
}

async function startBackend(name: 'east' | 'west'): Promise<void> {
  const b = await startEchoBackend(name, name === 'east' ? '127.0.0.1' : '127.0.0.2', port);
  backends.set(name, b);
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'portolan-locality-'));
  plane = await startInProcessPlane({ configDir: dir });
  const east = await startEchoBackend('east', '127.0.0.1', 0);
  port = east.port;
  backends.set('east', east);
  await startBackend('west');
  plane.mock.putService(mockService(HOST, [servicePort('grpc', 50051)]));
  plane.mock.setEndpoints(HOST, [
    endpoint('127.0.0.1', { grpc: port }, { locality: EAST }),
    endpoint('127.0.0.2', { grpc: port }, { locality: WEST }),
  ]);
});

after(async () => {
  await plane.stop();
  await Promise.all([...backends.values()].map((b) => b.stop()));
  await rm(dir, { recursive: true, force: true });
});

function callOnce(client: EchoClient): Promise<CallResult> {
  return new Promise((done) => {
    client.Echo({ message: 'hi' }, { deadline: Date.now() + 2000 }, (err, res) =>
      done(
        err
          ? { ok: false, code: String(err.code), details: err.details }
          : { ok: true, backend: res?.backend ?? '' },
      ),
    );
  });
}

/** Waits until the last STEADY calls all succeeded on `backend`. */
async function settlesOn(stream: CallStream, backend: string, what: string): Promise<void> {
  await eventually(
    () => {
      const tail = stream.results.slice(-STEADY);
      assert.equal(tail.length, STEADY, 'enough calls made');
      assert.deepEqual(
        tail.filter((r) => !r.ok || r.backend !== backend),
        [],
        `the last ${STEADY} calls succeed on ${backend}`,
      );
    },
    { timeoutMs: 45_000, what },
  );
}

const failed = (results: readonly CallResult[]): CallResult[] => results.filter((r) => !r.ok);

/**
 * The failover scenario on one client's stream: settled in the client's locality, the east backend
 * stops, calls move west; it comes back, calls move back. Reports the failed calls of each move.
 */
async function failover(t: TestContext, stream: CallStream, client: string): Promise<void> {
  await settlesOn(stream, 'east', `${client}: calls in the client's own locality`);
  const first = stream.results.findIndex((r) => r.ok);
  assert.deepEqual(
    stream.results.slice(first).filter((r) => r.ok && r.backend !== 'east'),
    [],
    'no call ever went to the other region while the local one was up',
  );

  await (backends.get('east') ?? assert.fail()).stop();
  const stoppedAt = stream.results.length;
  const stopTime = Date.now();
  await eventually(() => stream.results.slice(stoppedAt).some((r) => r.ok && r.backend === 'west'), {
    timeoutMs: 45_000,
    what: `${client}: a call answered in us-west`,
  });
  const movedMs = Date.now() - stopTime;
  await settlesOn(stream, 'west', `${client}: calls fail over to us-west`);
  const stopWindow = stream.results.slice(stoppedAt);
  const onStop = failed(stopWindow);

  await startBackend('east');
  const backAt = stream.results.length;
  const backTime = Date.now();
  await eventually(() => stream.results.slice(backAt).some((r) => r.ok && r.backend === 'east'), {
    timeoutMs: 45_000,
    what: `${client}: a call answered in us-east again`,
  });
  const returnedMs = Date.now() - backTime;
  await settlesOn(stream, 'east', `${client}: calls come back to us-east`);
  const returnWindow = stream.results.slice(backAt);
  const onReturn = failed(returnWindow);

  t.diagnostic(
    `${client}: ${onStop.length} failed calls of ${stopWindow.length} while failing over, ` +
      `${onReturn.length} of ${returnWindow.length} while coming back; ` +
      `first call on us-west ~${movedMs} ms after the stop, back on us-east ~${returnedMs} ms after the restart`,
  );
  // A handful at most: the calls in flight when the backend went away.
  assert.ok(onStop.length <= 5, `failing over lost ${onStop.length} calls: ${JSON.stringify(onStop)}`);
  assert.deepEqual(onReturn, [], 'coming back loses no call');
}

test('failover (grpc-js-xds): every call stays local, moves to the other region when the local backend stops, and comes back', async (t) => {
  await useExample('locality-failover.yaml');
  // In a process of its own: see test/support/grpc-js-call-child.ts.
  const stream = startGrpcJsEchoStream(TARGET, plane.address, 'locality-grpcjs-1', { node: CLIENT });
  try {
    await failover(t, stream, 'grpc-js-xds');
  } finally {
    await stream.stop();
  }
});

test('failover (C-core): every call stays local, moves to the other region when the local backend stops, and comes back', async (t) => {
  await useExample('locality-failover.yaml');
  // Not wait-for-ready: a call that finds no usable backend fails, and is counted.
  const stream = startCcoreEchoStream(TARGET, plane.address, 'locality-ccore-1', 1_000_000, {
    waitForReady: false,
    intervalMs: 10,
    timeoutS: 2,
    node: CLIENT,
  });
  try {
    await failover(t, stream, 'C-core');
  } finally {
    await stream.stop();
  }
});

function share(backendsHit: readonly (string | undefined)[], backend: string): number {
  return (100 * backendsHit.filter((b) => b === backend).length) / backendsHit.length;
}

test('distribute 80/20 (grpc-js-xds and C-core): 1,000 calls from us-east land 80/20 within 5 points', async (t) => {
  await useExample('locality-distribute.yaml');
  const client = xdsEchoClient(TARGET, plane.address, 'locality-grpcjs-2', CLIENT);
  try {
    await eventually(async () => assert.ok((await callOnce(client)).ok));
    const hits: (string | undefined)[] = [];
    for (let i = 0; i < DISTRIBUTE_CALLS; i++) {
      const r = await callOnce(client);
      assert.ok(r.ok, JSON.stringify(r));
      hits.push(r.backend);
    }
    const east = share(hits, 'east');
    t.diagnostic(`grpc-js-xds: ${east.toFixed(1)}% east, ${share(hits, 'west').toFixed(1)}% west`);
    assert.ok(east >= 75 && east <= 85, `east got ${east}%`);
  } finally {
    client.close();
  }
  const results = await ccoreEchoCalls(TARGET, plane.address, 'locality-ccore-2', DISTRIBUTE_CALLS, {
    intervalMs: 0,
    node: CLIENT,
  });
  assert.deepEqual(failed(results), []);
  const east = share(
    results.map((r) => r.backend),
    'east',
  );
  t.diagnostic(
    `C-core: ${east.toFixed(1)}% east, ${share(
      results.map((r) => r.backend),
      'west',
    ).toFixed(1)}% west`,
  );
  assert.ok(east >= 75 && east <= 85, `east got ${east}%`);
});

test('failover without outlier detection: no priorities (calls reach both regions) and a configz limitation', async () => {
  const example = readFileSync(join(repoRoot(), 'examples', 'traffic', 'locality-failover.yaml'), 'utf8');
  const withoutOutlier = example.replace(/ {4}outlierDetection:\n(?: {6}.*\n)+/, '');
  assert.notEqual(withoutOutlier, example);
  await useRule(withoutOutlier, 'the failover rule without outlier detection');
  const config = plane.config ?? assert.fail('config registry');
  assert.deepEqual(
    trafficLimitations(config.meshConfig())
      .filter((l) => l.resource === 'DestinationRule/default/echo-locality')
      .map((l) => [l.field, l.clients]),
    [['spec.trafficPolicy.loadBalancer.localityLbSetting', ['envoy', 'grpc']]],
  );
  const client = xdsEchoClient(TARGET, plane.address, 'locality-grpcjs-3', CLIENT);
  try {
    const seen = new Set<string>();
    await eventually(async () => {
      const r = await callOnce(client);
      if (r.ok && r.backend) seen.add(r.backend);
      assert.deepEqual([...seen].sort(), ['east', 'west']);
    });
  } finally {
    client.close();
  }
});
