// What the config directory reads, and its bounds: regular files only (a symlink to one is fine),
// at most 10 MiB and 1,000 documents per file, and a read that does not finish in time is an
// error for that file alone. Each problem is an error on the file's own status; the other files
// load. Real directories and a real FIFO; the hung read goes through a file system stand-in.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { open, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { MAX_DOCUMENTS_PER_FILE } from '../../../config-dir/parse.js';
import { MAX_CONFIG_FILE_BYTES, type ReadFs } from '../../../config-dir/read-file.js';
import { ConfigDirRegistry } from '../../../config-dir/registry.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir, workloadEntry } from './helpers.js';

const vm = (name: string, address: string): string =>
  workloadEntry(name, `  address: ${address}\n  labels: {app: echo}\n`);

async function started(
  t: TestContext,
  files: Record<string, string>,
  extra: (dir: string) => Promise<void> | void = () => {},
  options: { readFs?: ReadFs; readTimeoutMs?: number } = {},
) {
  const tmp = await makeTempDir();
  for (const [path, text] of Object.entries(files)) await tmp.write(path, text);
  await extra(tmp.dir);
  const registry = new ConfigDirRegistry({ dir: tmp.dir, debounceMs: 30, ...options });
  t.after(async () => {
    await registry.stop();
    await tmp.cleanup();
  });
  await registry.start();
  const files_ = () => Object.fromEntries(registry.debugState().files.map((f) => [f.path, f]));
  return { registry, files: files_ };
}

const workloads = (registry: ConfigDirRegistry): string[] =>
  registry
    .debugState()
    .resources.workloadEntries.map((w) => w.name)
    .sort();

test('a FIFO is an error on that file; the others load and start() returns', async (t) => {
  const { registry, files } = await started(t, { 'b.yaml': vm('b', '10.0.0.2') }, (dir) => {
    execFileSync('mkfifo', [join(dir, 'aaa.yaml')]);
  });
  const fifo = files()['aaa.yaml'];
  assert.equal(fifo?.status, 'error');
  assert.deepEqual(
    fifo?.errors.map((e) => [e.line, e.message]),
    [[0, 'not a regular file (a FIFO); only regular files, or symlinks to them, are loaded']],
  );
  assert.deepEqual(workloads(registry), ['b']);
});

test('a symlink to a regular file loads; a symlink to a FIFO does not', async (t) => {
  // The target is in a hidden directory, as a ConfigMap volume's `..data/` is: read through the link only.
  const { registry, files } = await started(
    t,
    { '.real/target.yml': vm('linked', '10.0.0.3') },
    async (dir) => {
      await symlink(join(dir, '.real/target.yml'), join(dir, 'link.yaml'));
      execFileSync('mkfifo', [join(dir, 'pipe')]);
      await symlink(join(dir, 'pipe'), join(dir, 'pipe-link.yaml'));
    },
  );
  assert.equal(files()['link.yaml']?.status, 'ok');
  assert.match(files()['pipe-link.yaml']?.errors[0]?.message ?? '', /not a regular file \(a FIFO\)/);
  assert.deepEqual(workloads(registry), ['linked']);
});

test('a file over 10 MiB is an error naming the limit, and is not parsed', async (t) => {
  const big = `${vm('big', '10.0.0.4')}# ${'x'.repeat(MAX_CONFIG_FILE_BYTES)}\n`;
  const { registry, files } = await started(t, { 'big.yaml': big, 'small.yaml': vm('small', '10.0.0.5') });
  assert.deepEqual(
    files()['big.yaml']?.errors.map((e) => [e.line, e.message]),
    [[0, `larger than 10 MiB (${Buffer.byteLength(big)} bytes); not loaded`]],
  );
  assert.deepEqual(workloads(registry), ['small']);
});

test('a file with more than 1,000 documents is an error at the first one too many', async (t) => {
  const docs = Array.from({ length: MAX_DOCUMENTS_PER_FILE + 1 }, (_, i) => vm(`vm-${i}`, '10.0.0.6'));
  const text = docs.join('---\n');
  const { registry, files } = await started(t, { 'many.yaml': text });
  const errors = files()['many.yaml']?.errors ?? [];
  assert.equal(errors.length, 1);
  assert.equal(errors[0]?.message, 'more than 1000 documents in one file; split it');
  assert.equal(errors[0]?.line, text.split('\n').lastIndexOf('---') + 1, 'the line of its `---`');
  assert.deepEqual(workloads(registry), []);

  // Exactly at the limit it loads.
  const { registry: atLimit } = await started(t, { 'many.yaml': docs.slice(1).join('---\n') });
  assert.equal(workloads(atLimit).length, MAX_DOCUMENTS_PER_FILE);
});

test('a read that does not finish in time is an error for that file alone; it is read again once the call returns', async (t) => {
  let release: (() => void) | undefined;
  let opens = 0;
  const hangsOnce: ReadFs = {
    async open(path) {
      if (path.endsWith('slow.yaml') && opens++ === 0) {
        await new Promise<void>((resolve) => (release = resolve));
        throw new Error('the stuck call returned');
      }
      return open(path, 'r');
    },
  };
  const { registry, files } = await started(
    t,
    { 'slow.yaml': vm('slow', '10.0.0.7'), 'fast.yaml': vm('fast', '10.0.0.8') },
    () => {},
    { readFs: hangsOnce, readTimeoutMs: 200 },
  );
  t.after(() => release?.());
  assert.deepEqual(
    files()['slow.yaml']?.errors.map((e) => e.message),
    ['read did not finish within 200 ms'],
  );
  assert.deepEqual(workloads(registry), ['fast']);
  // The watcher's recheck of the batch does not start a second read while the first is stuck.
  await registry.settled();
  assert.equal(opens, 1);

  release?.();
  await eventually(() => assert.deepEqual(workloads(registry), ['fast', 'slow']), {
    what: 'the file to be read again once the stuck call returned',
  });
  assert.equal(files()['slow.yaml']?.status, 'ok');
});
