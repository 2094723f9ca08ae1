// A candidate of the whole config directory (config-dir/candidate.ts): evaluated as the directory
// would take it, against a running registry on a real directory, without touching either; its
// bounds (paths that leave the directory, count, size, time) refuse it as a whole.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import fc from 'fast-check';
import {
  CandidateError,
  checkCandidateFiles,
  DEFAULT_CANDIDATE_LIMITS,
  evaluateCandidate,
  type CandidateFile,
} from '../../../config-dir/candidate.js';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { configText } from '../../support/config-arbitraries.js';
import { makeTempDir, workloadEntry } from './helpers.js';

const SE = (name: string, host: string, address: string): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ${name}, namespace: default}
spec:
  hosts: [${host}]
  resolution: STATIC
  ports: [{name: grpc, number: 50051, protocol: GRPC}]
  endpoints: [{address: ${address}}]
`;

const FILES: Record<string, string> = {
  'services/a.yaml': SE('a', 'a.example.internal', '10.0.0.1'),
  'services/b.yaml': SE('b', 'b.example.internal', '10.0.0.2'),
  'vms/vm-1.yaml': workloadEntry('vm-1', '  address: 10.0.1.1\n  labels: {app: a}\n'),
};

async function running(t: TestContext, files: Record<string, string>) {
  const tmp = await makeTempDir();
  for (const [path, text] of Object.entries(files)) await tmp.write(path, text);
  const registry = new ConfigDirRegistry({ dir: tmp.dir, debounceMs: 20 });
  t.after(async () => {
    await registry.stop();
    await tmp.cleanup();
  });
  await registry.start();
  return { registry, dir: tmp.dir };
}

const asFiles = (files: Record<string, string>): CandidateFile[] =>
  Object.entries(files).map(([path, content]) => ({ path, content }));

const soon = () => ({ at: Date.now() + 10_000, limitMs: 10_000 });

function refusal(files: CandidateFile[], limits = DEFAULT_CANDIDATE_LIMITS): CandidateError {
  try {
    checkCandidateFiles(files, limits);
  } catch (err) {
    assert.ok(err instanceof CandidateError, String(err));
    return err;
  }
  assert.fail(`accepted ${JSON.stringify(files.map((f) => f.path))}`);
}

test('a path outside the directory, absolute or not plain is refused with 400; so is one given twice', () => {
  for (const path of [
    '../x.yaml',
    'a/../../x.yaml',
    '/etc/x.yaml',
    'C:/x.yaml',
    'a//b.yaml',
    './a.yaml',
    'a\\b.yaml',
    '',
    'a\0.yaml',
  ]) {
    const err = refusal([{ path, content: '' }]);
    assert.equal(err.status, 400, path);
    assert.match(err.message, /files\[0\]\.path/);
  }
  const twice = refusal([
    { path: 'a.yaml', content: '' },
    { path: 'a.yaml', content: '' },
  ]);
  assert.equal(twice.status, 400);
  assert.match(twice.message, /given twice/);
  checkCandidateFiles([{ path: 'deep/er/a.yaml', content: 'x' }]); // a plain relative path is fine
});

test('more files than the limit, or a file over the size limit, is refused with 413', () => {
  const limits = { ...DEFAULT_CANDIDATE_LIMITS, maxFiles: 2, maxFileBytes: 10 };
  assert.equal(refusal(asFiles({ 'a.yaml': '', 'b.yaml': '', 'c.yaml': '' }), limits).status, 413);
  // Bytes, not characters: five two-byte characters and a byte are eleven.
  assert.equal(refusal(asFiles({ 'a.yaml': 'ééééé!' }), limits).status, 413);
  checkCandidateFiles(asFiles({ 'a.yaml': 'ééééé', 'b.yaml': '' }), limits);
  assert.equal(DEFAULT_CANDIDATE_LIMITS.maxFileBytes, 10 * 1024 * 1024);
});

test('a broken file is a problem with its file and line; it keeps its version in force and the others apply', async (t) => {
  const { registry, dir } = await running(t, FILES);
  const before = JSON.stringify(registry.debugState());
  const broken = SE('b', 'b.example.internal', '10.0.0.2').replace('number: 50051', 'number: 70000');
  const result = await evaluateCandidate(
    asFiles({
      ...FILES,
      'services/b.yaml': broken,
      'services/a.yaml': SE('a', 'a.example.internal', '10.0.0.9'),
    }),
    registry.candidateBase(),
    soon(),
  );
  assert.equal(result.problems.length, 1, JSON.stringify(result.problems));
  assert.deepEqual(
    { file: result.problems[0]?.file, line: result.problems[0]?.line },
    { file: 'services/b.yaml', line: 7 },
  );
  assert.match(result.problems[0]?.message ?? '', /^spec\.ports\[0\]\.number: /);
  assert.equal(result.snapshot.endpoints.get('a.example.internal')?.[0]?.address, '10.0.0.9');
  assert.equal(result.snapshot.endpoints.get('b.example.internal')?.[0]?.address, '10.0.0.2');
  // Nothing touched: the registry's state and the files on disk.
  assert.equal(JSON.stringify(registry.debugState()), before);
  assert.equal(registry.snapshot().endpoints.get('a.example.internal')?.[0]?.address, '10.0.0.1');
  assert.equal(await readFile(join(dir, 'services/a.yaml'), 'utf8'), FILES['services/a.yaml']);
});

test('the established definition wins: a new file claiming a host another file holds is held back', async (t) => {
  const { registry } = await running(t, FILES);
  const result = await evaluateCandidate(
    asFiles({ ...FILES, 'services/0-new.yaml': SE('new', 'a.example.internal', '10.0.0.3') }),
    registry.candidateBase(),
    soon(),
  );
  assert.equal(result.problems.length, 1, JSON.stringify(result.problems));
  assert.equal(result.problems[0]?.file, 'services/0-new.yaml');
  assert.match(result.problems[0]?.message ?? '', /already served by ServiceEntry\/default\/a/);
  assert.equal(result.snapshot.endpoints.get('a.example.internal')?.[0]?.address, '10.0.0.1');
});

test('a file left out is removed; an emptied one is rejected and keeps its version', async (t) => {
  const { registry } = await running(t, FILES);
  const result = await evaluateCandidate(
    asFiles({ 'services/a.yaml': '  \n', 'vms/vm-1.yaml': FILES['vms/vm-1.yaml'] ?? '' }),
    registry.candidateBase(),
    soon(),
  );
  assert.equal(result.snapshot.services.has('b.example.internal'), false);
  assert.equal(result.snapshot.services.has('a.example.internal'), true);
  assert.deepEqual(
    result.problems.map((p) => [p.file, p.line]),
    [['services/a.yaml', 1]],
  );
  assert.match(result.problems[0]?.message ?? '', /file is empty/);
});

test('an evaluation past its deadline is refused (503)', async (t) => {
  const { registry } = await running(t, FILES);
  let now = 0;
  const clock = { now: () => (now += 4000), pause: () => Promise.resolve() };
  await assert.rejects(
    evaluateCandidate(asFiles(FILES), registry.candidateBase(), { at: 10_000, limitMs: 10_000 }, clock),
    (err: unknown) => err instanceof CandidateError && err.status === 503 && /10000 ms/.test(err.message),
  );
});

test('property: the running directory evaluated as its own candidate is what the registry serves', async (t) => {
  const tmp = await makeTempDir();
  t.after(() => tmp.cleanup());
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(configText, { minLength: 1, maxLength: 4 }), async (texts) => {
      run += 1;
      const files = Object.fromEntries(texts.map((text, i) => [`run-${run}/f${i}.yaml`, text]));
      for (const [path, text] of Object.entries(files)) await tmp.write(path, text);
      const registry = new ConfigDirRegistry({ dir: join(tmp.dir, `run-${run}`), debounceMs: 20 });
      try {
        await registry.start();
        const own = asFiles(Object.fromEntries(texts.map((text, i) => [`f${i}.yaml`, text])));
        const result = await evaluateCandidate(own, registry.candidateBase(), soon());
        assert.deepEqual(result.snapshot.services, registry.snapshot().services);
        assert.deepEqual(result.snapshot.endpoints, registry.snapshot().endpoints);
        const mesh = registry.meshConfig();
        assert.equal(result.meshConfig.generation, mesh.generation);
        assert.deepEqual(result.meshConfig.virtualServices, mesh.virtualServices);
        assert.deepEqual(result.meshConfig.destinationRules, mesh.destinationRules);
        // The problems are the errors /debug/configz shows, file by file.
        const shown = registry.debugState().files.flatMap((f) => f.errors.map((e) => [f.path, e.line]));
        assert.deepEqual(
          result.problems.map((p) => [p.file, p.line]),
          shown,
        );
      } finally {
        await registry.stop();
      }
    }),
    { numRuns: 15 },
  );
});
