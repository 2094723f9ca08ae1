// POST /debug/diff over HTTP (admin/admin-server.ts, admin/diff.ts): the contract's answer, and its
// bounds — a body over 64 MiB or a candidate over the file count or a file's size is 413, a bad body
// or a path leaving the directory is 400, a cross-origin request 403, other methods 405, and a
// second request while one is evaluated 429. One admin server on an in-process plane.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { AdminServer } from '../../admin/admin-server.js';
import { DiffService } from '../../admin/diff.js';
import { DEFAULT_CANDIDATE_LIMITS, type EvaluationClock } from '../../config-dir/candidate.js';
import { silentLogger } from '../../log/logger.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../../xds/generators/index.js';
import { makeTempDir } from '../unit/config-dir/helpers.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';

const SE = `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: a, namespace: default}
spec:
  hosts: [a.example.internal]
  resolution: STATIC
  ports: [{name: grpc, number: 50051, protocol: GRPC}]
  endpoints: [{address: 10.0.0.1}]
`;

let plane: InProcessPlane;
let admin: AdminServer;
let base = '';
let cleanup: () => Promise<void>;
/** While set, an evaluation waits here at its pauses (the clock makes every slice long) ... */
let gate: Promise<void> | undefined;
/** ... and says so here. */
let paused: () => void = () => {};

before(async () => {
  const tmp = await makeTempDir();
  cleanup = tmp.cleanup;
  await tmp.write('a.yaml', SE);
  plane = await startInProcessPlane({ configDir: tmp.dir });
  const config = plane.config;
  assert.ok(config);
  let now = 0;
  const clock: EvaluationClock = {
    now: () => (now += 20),
    pause: () => {
      paused();
      return gate ?? Promise.resolve();
    },
  };
  const diff = new DiffService({
    config,
    discovery: plane.discovery,
    streams: () => plane.ads.streamList(),
    generators: new GeneratorTable(DEFAULT_GENERATORS),
    limits: { ...DEFAULT_CANDIDATE_LIMITS, maxFiles: 3, maxFileBytes: 1024 },
    clock,
  });
  admin = new AdminServer({ discovery: plane.discovery, ads: plane.ads, config, diff, logger: silentLogger });
  const address = await admin.listen('127.0.0.1', 0);
  base = `http://127.0.0.1:${address.port}`;
});

after(async () => {
  await admin.close();
  await plane.stop();
  await cleanup();
});

async function post(
  body: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${base}/debug/diff`, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** `count` chunks of `size` bytes, chunked (no content-length). */
function postChunked(count: number, size: number): Promise<{ status: number; error: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/debug/diff`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            error: String((JSON.parse(text) as { error?: unknown }).error),
          }),
        );
      },
    );
    req.on('error', reject);
    const chunk = Buffer.alloc(size, 0x20);
    for (let i = 0; i < count; i++) req.write(chunk);
    req.end();
  });
}

const filesBody = (files: { path: string; content: string }[]): string => JSON.stringify({ files });

test('a candidate is answered in the contract shape', async () => {
  const res = await post(filesBody([{ path: 'a.yaml', content: SE.replace('10.0.0.1', '10.0.0.2') }]));
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body).sort(), ['evaluatedMs', 'problems', 'proxies']);
  assert.deepEqual(res.body.proxies, []); // no proxy is connected
  assert.deepEqual(res.body.problems, []);
  assert.equal(typeof res.body.evaluatedMs, 'number');
});

test('a bad body or a path that leaves the directory is 400', async () => {
  for (const [body, why] of [
    ['{"files":', /invalid JSON/],
    ['{"file":[]}', /must be \{"files"/],
    ['{"files":[{"path":"a.yaml"}]}', /files\[0\]/],
    [filesBody([{ path: '../outside.yaml', content: SE }]), /"\.\." segment/],
    [filesBody([{ path: '/etc/passwd.yaml', content: SE }]), /absolute/],
  ] as const) {
    const res = await post(body);
    assert.equal(res.status, 400, body);
    assert.match(String(res.body.error), why);
  }
});

test('a body over 64 MiB, too many files or a file over its size limit is 413', async () => {
  const huge = await post('x'.repeat(64 * 1024 * 1024 + 1));
  assert.equal(huge.status, 413);
  assert.match(String(huge.body.error), /64 MiB/);
  // Sent in chunks with no length declared: read to its end, not kept, then refused.
  const chunked = await postChunked(65, 1024 * 1024);
  assert.equal(chunked.status, 413);
  assert.match(chunked.error, /64 MiB/);
  const many = await post(filesBody(['a', 'b', 'c', 'd'].map((n) => ({ path: `${n}.yaml`, content: '' }))));
  assert.equal(many.status, 413);
  assert.match(String(many.body.error), /more than the 3/);
  const large = await post(filesBody([{ path: 'a.yaml', content: 'x'.repeat(1025) }]));
  assert.equal(large.status, 413);
  assert.match(String(large.body.error), /larger than 1024 bytes/);
});

test('a cross-origin request is 403, another method 405, another content type 415', async () => {
  const foreign = await post(filesBody([]), {
    'content-type': 'application/json',
    origin: 'http://evil.example',
  });
  assert.equal(foreign.status, 403);
  assert.equal((await fetch(`${base}/debug/diff`)).status, 405);
  const form = await post('files=1', { 'content-type': 'application/x-www-form-urlencoded' });
  assert.equal(form.status, 415);
  assert.equal((await post(filesBody([]), {})).status, 415);
});

test('a second request while one is evaluated is 429; the first is answered', async () => {
  let release = (): void => {};
  gate = new Promise<void>((resolve) => (release = resolve));
  try {
    const waiting = new Promise<void>((resolve) => (paused = resolve));
    const first = post(
      filesBody([
        { path: 'a.yaml', content: SE },
        { path: 'b.yaml', content: SE },
      ]),
    );
    await waiting; // the first is being evaluated
    const second = await post(filesBody([]));
    assert.equal(second.status, 429);
    assert.match(String(second.body.error), /another diff/);
    release();
    assert.equal((await first).status, 200);
  } finally {
    gate = undefined;
    paused = () => {};
    release();
  }
});
