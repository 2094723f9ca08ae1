// VirtualServices end to end with the real @grpc/grpc-js-xds client and echo backends, driven by the
// config directory. The VirtualService and DestinationRule YAML is read from examples/traffic/ (the
// files docs/traffic.md shows), so the documentation is what is tested. Each step rewrites the one
// VirtualService file in place: every change of behaviour below is a live edit. A step waits until
// the client's calls follow the new routes (an ACK comes before the channel uses them: the routes
// can name clusters it has yet to fetch), and the client speaks through an ADS tap that records any
// NACK.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { parse, parseAllDocuments, stringify } from 'yaml';
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

const TARGET = 'xds:///echo.example.internal:50051';
const NODE_ID = 'traffic-e2e';

/** The repository's examples/traffic: found above this (compiled) file, else from the working directory. */
function examplesDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'examples', 'traffic'))) return join(dir, 'examples', 'traffic');
  }
  return resolve('examples', 'traffic');
}
const example = (file: string): string => readFileSync(join(examplesDir(), file), 'utf8');

let dir: string;
let plane: InProcessPlane;
let tap: AdsTap;
let client: EchoClient;
const backends: EchoBackend[] = [];

before(async () => {
  const v1 = await startEchoBackend('v1', '127.0.0.1');
  backends.push(v1, await startEchoBackend('v2', '127.0.0.2', v1.port));
  dir = mkdtempSync(join(tmpdir(), 'portolan-traffic-'));
  // The example's VMs listen on 50051; ours on a free port, set on each WorkloadEntry.
  const docs = parseAllDocuments(example('echo-service.yaml')).map((doc) => {
    if (doc.get('kind') === 'WorkloadEntry') doc.setIn(['spec', 'ports'], { grpc: v1.port });
    return doc.toString();
  });
  writeFileSync(join(dir, 'echo-service.yaml'), docs.join('---\n'));
  writeFileSync(join(dir, 'destination-rule.yaml'), example('destination-rule.yaml'));
  plane = await startInProcessPlane({ configDir: dir });
  tap = await startAdsTap(plane.address);
  client = xdsEchoClient(TARGET, tap.address, NODE_ID);
});

after(async () => {
  client?.close();
  tap?.stop();
  await plane?.stop();
  await Promise.all(backends.map((b) => b.stop()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The header of the probe route each applied VirtualService gets, and the status it aborts with. */
const PROBE_HEADER = 'x-config-probe';
const PROBE_STATUS = 'DATA_LOSS';
let step = 0;

/**
 * `text` with one route first in `spec.http`: calls carrying `x-config-probe: STEP` are aborted with
 * DATA_LOSS (no other route of these examples produces it). The other routes are the example's, in
 * order; only the probe header reaches the probe.
 */
function withProbe(text: string, probe: number): string {
  const vs = parse(text) as { spec: { http: unknown[] } };
  const route = {
    name: 'config-probe',
    match: [{ headers: { [PROBE_HEADER]: { exact: String(probe) } } }],
    fault: { abort: { grpcStatus: PROBE_STATUS, percentage: { value: 100 } } },
    route: [{ destination: { host: 'echo.example.internal' } }],
  };
  vs.spec.http = [route, ...vs.spec.http];
  return stringify(vs);
}

/** Whether the client's calls follow the routes of step `probe`: its probe call is aborted. */
async function probeAborted(probe: number): Promise<boolean> {
  const r = await callEchoWith(client, { [PROBE_HEADER]: String(probe) });
  return 'error' in r && r.error.code === grpc.status.DATA_LOSS && r.error.details === 'Fault injected';
}

/**
 * Writes (or with undefined, deletes) the VirtualService file and waits until the client's calls
 * follow it: the new step's probe is aborted (or, after a delete, the last step's probe no longer is).
 */
async function applyVirtualService(text: string | undefined): Promise<void> {
  const file = join(dir, 'echo-vs.yaml');
  const previous = step;
  if (text === undefined) unlinkSync(file);
  else writeFileSync(file, withProbe(text, ++step));
  await eventually(
    async () =>
      text === undefined
        ? assert.equal(await probeAborted(previous), false, 'the deleted routes are out of use')
        : assert.equal(await probeAborted(step), true, `the routes of step ${step} are in use`),
    { timeoutMs: 15_000 },
  );
  assert.deepEqual(tap.nacks, [], 'the client NACKed nothing');
}

async function backendOf(metadata: Record<string, string> = {}): Promise<string> {
  const r = await callEchoWith(client, metadata);
  if ('error' in r) throw r.error;
  return r.backend;
}

test('with the DestinationRule alone, calls use the default route over both versions', async () => {
  await eventually(async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add(await backendOf());
    assert.deepEqual([...seen].sort(), ['v1', 'v2']);
  });
});

test('canary: an 80/20 split lands within ±5 points over 1,000 calls', async (t) => {
  await applyVirtualService(example('canary.yaml'));
  const counts = new Map<string, number>();
  for (let batch = 0; batch < 20; batch++) {
    const names = await Promise.all(Array.from({ length: 50 }, () => backendOf()));
    for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  }
  const v1 = counts.get('v1') ?? 0;
  const v2 = counts.get('v2') ?? 0;
  assert.equal(v1 + v2, 1000);
  t.diagnostic(`v1 ${v1}, v2 ${v2} of 1000 calls`);
  assert.ok(Math.abs(v1 / 10 - 80) <= 5, `v1 got ${v1 / 10}%`);
  assert.ok(Math.abs(v2 / 10 - 20) <= 5, `v2 got ${v2 / 10}%`);
});

test('header routing: marked calls go to the v2 subset, the rest to v1', async () => {
  await applyVirtualService(example('header-routing.yaml'));
  for (let i = 0; i < 20; i++) {
    assert.equal(await backendOf({ 'x-canary': 'true' }), 'v2');
    assert.equal(await backendOf(), 'v1');
    assert.equal(await backendOf({ 'x-canary': 'false' }), 'v1');
  }
});

test('a broken edit is rejected and the last good routes stay in force', async () => {
  const broken = example('header-routing.yaml').replace('{ exact: "true" }', '{ regex: "(?=true)" }');
  assert.notEqual(broken, example('header-routing.yaml'));
  writeFileSync(join(dir, 'echo-vs.yaml'), broken);
  await eventually(() => {
    const file = plane.config?.debugState().files.find((f) => f.path === 'echo-vs.yaml');
    assert.equal(file?.status, 'error');
    assert.match(file?.errors[0]?.message ?? '', /not a valid RE2 regex/);
    assert.equal(file?.errors[0]?.path, 'spec.http[0].match[0].headers.x-canary.regex');
  });
  for (let i = 0; i < 10; i++) {
    assert.equal(await backendOf({ 'x-canary': 'true' }), 'v2');
    assert.equal(await backendOf(), 'v1');
  }
});

test('fault injection: an abort fails marked calls with the configured status; a delay still answers', async () => {
  await applyVirtualService(example('fault-injection.yaml'));
  const before = backends.map((b) => b.calls());
  for (let i = 0; i < 10; i++) {
    const r = await callEchoWith(client, { 'x-chaos': 'abort' });
    assert.ok('error' in r, 'the call fails');
    assert.equal(r.error.code, grpc.status.UNAVAILABLE);
    assert.equal(r.error.details, 'Fault injected');
  }
  assert.deepEqual(
    backends.map((b) => b.calls()),
    before,
    'aborted calls never reach a backend',
  );
  assert.match(await backendOf({ 'x-chaos': 'delay' }), /^v[12]$/);
  assert.match(await backendOf(), /^v[12]$/);
});

test('timeouts and retries: a call slower than the route timeout fails with DEADLINE_EXCEEDED; UNAVAILABLE is retried', async () => {
  await applyVirtualService(example('retries-timeouts.yaml'));
  // The caller allows 20 s; the route allows 1 s; the backend takes 3 s.
  const slow = await callEchoWith(client, { 'x-delay-ms': '3000' }, 20_000);
  assert.ok('error' in slow, 'the slow call fails');
  assert.equal(slow.error.code, grpc.status.DEADLINE_EXCEEDED);
  assert.match(await backendOf({ 'x-delay-ms': '10' }), /^v[12]$/);
  // Every other x-flaky call on a backend fails with UNAVAILABLE: with retries, none fails.
  const before = backends.reduce((n, b) => n + b.calls(), 0);
  for (let i = 0; i < 10; i++) assert.match(await backendOf({ 'x-flaky': '1' }), /^v[12]$/);
  const attempts = backends.reduce((n, b) => n + b.calls(), 0) - before;
  assert.ok(attempts > 10, `retried: ${attempts} attempts for 10 calls`);
});

test('deleting the VirtualService brings the default route back', async () => {
  await applyVirtualService(undefined);
  await eventually(async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) seen.add(await backendOf({ 'x-canary': 'true' }));
    assert.deepEqual([...seen].sort(), ['v1', 'v2']);
  });
});
