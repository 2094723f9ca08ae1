// The config directory's watcher against a real directory: chokidar watches the files, `DirTree` one
// `fs.watch` per directory for entries added and removed. Each case edits the tree the way a person or
// a deploy tool does and checks what the reload function was handed and read.
import assert from 'node:assert/strict';
import { mkdir, readFile, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test, type TestContext } from 'node:test';
import { DirWatcher } from '../../../config-dir/watcher.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir } from './helpers.js';

/** A watcher whose reloads keep `files` (relative path → text) equal to what was read. */
async function watching(t: TestContext, dir: string, cleanup: () => Promise<void>) {
  const files = new Map<string, string>();
  const batches: string[][] = [];
  const errors: Error[] = [];
  const watcher = new DirWatcher({
    dir,
    debounceMs: 20,
    reload: async (paths) => {
      batches.push([...paths].sort());
      let changed = false;
      for (const path of paths) {
        const text = await readFile(join(dir, path), 'utf8').catch(() => undefined);
        if (text === files.get(path)) continue;
        changed = true;
        if (text === undefined) files.delete(path);
        else files.set(path, text);
      }
      return changed;
    },
    onError: (e) => errors.push(e),
  });
  // Stopped before its directory is removed, so no event of the removal outlives the test.
  t.after(async () => {
    await watcher.stop();
    await cleanup();
  });
  await watcher.start();
  return { files, batches, errors, watcher };
}

test('an edit in a directory of 2,000 files reloads that file alone', async (t) => {
  const tmp = await makeTempDir();
  for (let i = 0; i < 2000; i++) await writeFile(join(tmp.dir, `svc-${i}.yaml`), `n: ${i}\n`);
  const { files, batches, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  assert.equal(files.size, 2000);
  await watcher.settled(); // the start's own re-read is not the edit's
  const before = batches.length;
  await writeFile(join(tmp.dir, 'svc-7.yaml'), 'n: edited\n');
  await eventually(() => assert.equal(files.get('svc-7.yaml'), 'n: edited\n'));
  for (const batch of batches.slice(before)) assert.deepEqual(batch, ['svc-7.yaml']);
});

test('a file deleted and written again later is still watched: its next edit arrives', async (t) => {
  const tmp = await makeTempDir();
  await tmp.write('a.yaml', 'v: 1\n');
  const { files, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  await unlink(join(tmp.dir, 'a.yaml'));
  await eventually(() => assert.equal(files.has('a.yaml'), false));
  await sleep(200); // past chokidar's window for an atomic replace: a real delete, then a new file
  await writeFile(join(tmp.dir, 'a.yaml'), 'v: 2\n');
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: 2\n'));
  await watcher.settled(); // past the re-read that follows every change: the next edit needs a watch
  await writeFile(join(tmp.dir, 'a.yaml'), 'v: 3\n');
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: 3\n'), { what: 'the edit after re-creation' });
});

test('a subdirectory made later, two levels deep, is watched: its files and their edits arrive', async (t) => {
  const tmp = await makeTempDir();
  const { files, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  await mkdir(join(tmp.dir, 'team', 'payments'), { recursive: true });
  await writeFile(join(tmp.dir, 'team', 'payments', 'svc.yaml'), 'v: 1\n');
  await eventually(() => assert.equal(files.get('team/payments/svc.yaml'), 'v: 1\n'));
  await watcher.settled();
  await writeFile(join(tmp.dir, 'team', 'payments', 'svc.yaml'), 'v: 2\n');
  await eventually(() => assert.equal(files.get('team/payments/svc.yaml'), 'v: 2\n'));
});

test('a directory renamed inside the tree moves its files; one moved out removes them', async (t) => {
  const tmp = await makeTempDir();
  const outside = await makeTempDir();
  await tmp.write('old/a.yaml', 'v: 1\n');
  await tmp.write('gone/b.yaml', 'v: 1\n');
  const { files, batches, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  t.after(outside.cleanup);
  await rename(join(tmp.dir, 'old'), join(tmp.dir, 'new'));
  await eventually(() => assert.deepEqual([...files.keys()].sort(), ['gone/b.yaml', 'new/a.yaml']));
  await watcher.settled();
  await writeFile(join(tmp.dir, 'new', 'a.yaml'), 'v: 2\n');
  await eventually(() => assert.equal(files.get('new/a.yaml'), 'v: 2\n'));
  await watcher.settled();
  await writeFile(join(tmp.dir, 'new', 'a.yaml'), 'v: 3\n');
  await eventually(() => assert.equal(files.get('new/a.yaml'), 'v: 3\n'));

  await rename(join(tmp.dir, 'gone'), join(outside.dir, 'gone'));
  await eventually(() => assert.equal(files.has('gone/b.yaml'), false));
  await watcher.settled(); // the re-read that follows every change
  const before = batches.length;
  await writeFile(join(outside.dir, 'gone', 'b.yaml'), 'v: 2\n');
  await sleep(300);
  assert.deepEqual(batches.slice(before), [], 'a file moved out of the tree is no longer watched');
});

test('a symlink loop is followed once, and an unreadable tree does not stop the rest', async (t) => {
  const tmp = await makeTempDir();
  await tmp.write('svc/a.yaml', 'v: 1\n');
  await symlink('..', join(tmp.dir, 'svc', 'loop'));
  const { files, errors } = await watching(t, tmp.dir, tmp.cleanup);
  assert.deepEqual([...files.keys()], ['svc/a.yaml']);
  assert.deepEqual(errors, []);
  await rm(join(tmp.dir, 'svc', 'loop'));
  await writeFile(join(tmp.dir, 'svc', 'a.yaml'), 'v: 2\n');
  await eventually(() => assert.equal(files.get('svc/a.yaml'), 'v: 2\n'));
});

test('hidden entries are not watched; a file renamed into place is read', async (t) => {
  const dir = join(tmpdir(), `portolan-dirwatch-${process.pid}-${Date.now()}`);
  await mkdir(dir);
  const { files } = await watching(t, dir, () => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, '.git'));
  await writeFile(join(dir, '.git', 'x.yaml'), 'hidden: true\n');
  await writeFile(join(dir, '.a.yaml.swp'), 'swap\n');
  await writeFile(join(dir, 'a.yaml.tmp'), 'v: 1\n');
  await rename(join(dir, 'a.yaml.tmp'), join(dir, 'a.yaml'));
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: 1\n'));
  assert.deepEqual([...files.keys()], ['a.yaml']);
});

test('an edit chokidar reported in full is read once; a file just found is read again after its batch', async (t) => {
  const tmp = await makeTempDir();
  await tmp.write('a.yaml', 'v: 1\n');
  const { files, batches, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  await watcher.settled();
  // One write(2) of the same length into the open file: one inotify event, so chokidar drops none.
  let before = batches.length;
  await writeFile(join(tmp.dir, 'a.yaml'), 'v: 2\n', { flag: 'r+' });
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: 2\n'));
  await watcher.settled();
  assert.deepEqual(batches.slice(before), [['a.yaml']]);
  // A new file may have been written before chokidar watched it: its batch is read once more.
  before = batches.length;
  await tmp.write('b.yaml', 'v: 1\n');
  await eventually(() => assert.equal(files.get('b.yaml'), 'v: 1\n'));
  await watcher.settled();
  assert.deepEqual(batches.slice(before), [['b.yaml'], ['b.yaml']]);
});

test('writes chokidar drops (within 50 ms of the one it reported) are read by the recheck', async (t) => {
  const tmp = await makeTempDir();
  await tmp.write('a.yaml', 'v: 1\n');
  const { files, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  await watcher.settled();
  // Ten writes 8 ms apart: chokidar reports the first, drops the rest until 50 ms have passed.
  for (let i = 2; i <= 11; i++) {
    await writeFile(join(tmp.dir, 'a.yaml'), `v: ${i}\n`);
    await sleep(8);
  }
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: 11\n'));
  await watcher.settled();
  assert.equal(files.get('a.yaml'), 'v: 11\n');
});
