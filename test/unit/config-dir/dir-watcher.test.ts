// The config directory's watcher against a real directory: `DirTree` has one `fs.watch` per directory
// for entries added and removed and for writes to regular files, chokidar watches the symlinked files.
// Each case edits the tree the way a person or a deploy tool does and checks what the reload function
// was handed and read.
import assert from 'node:assert/strict';
import { mkdir, readFile, rename, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { test, type TestContext } from 'node:test';
import type { TimerHandle, Timers } from '../../../config-dir/timers.js';
import { DirWatcher } from '../../../config-dir/watcher.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir } from './helpers.js';

/** A watcher whose reloads keep `files` (relative path → text) equal to what was read. */
async function watching(t: TestContext, dir: string, cleanup: () => Promise<void>, timers?: Timers) {
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
    onReloadError: (e) => errors.push(e),
    ...(timers && { timers }),
  });
  // Stopped before its directory is removed, so no event of the removal outlives the test.
  t.after(async () => {
    await watcher.stop();
    await cleanup();
  });
  await watcher.start();
  return { files, batches, errors, watcher };
}

/**
 * Writes `name` in the tree and waits until its batch is read: proof that the watcher has handled
 * every event before it (inotify reports in order), for a check that something did not happen.
 */
async function processed(dir: string, files: ReadonlyMap<string, string>, name: string): Promise<void> {
  await writeFile(join(dir, name), 'marker: true\n');
  await eventually(() => assert.equal(files.get(name), 'marker: true\n'), { what: `${name} read` });
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
  // A regular file is the tree's to watch (chokidar, and its window for an atomic replace, see
  // only symlinks): written again at once, it is a new file.
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
  await processed(tmp.dir, files, 'marker.yaml');
  assert.deepEqual(
    batches.slice(before),
    [['marker.yaml']],
    'a file moved out of the tree is no longer watched',
  );
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

test('a regular file is read once per edit, a new one once: its directory reports every write', async (t) => {
  const tmp = await makeTempDir();
  await tmp.write('a.yaml', 'v: 1\n');
  const { files, batches, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  await watcher.settled();
  // A truncating rewrite: two inotify events (the truncate, the write), one batch, no re-read.
  let before = batches.length;
  await writeFile(join(tmp.dir, 'a.yaml'), 'v: 2, longer\n');
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: 2, longer\n'));
  await watcher.settled();
  assert.deepEqual(batches.slice(before), [['a.yaml']]);
  before = batches.length;
  await tmp.write('b.yaml', 'v: 1\n');
  await eventually(() => assert.equal(files.get('b.yaml'), 'v: 1\n'));
  await watcher.settled();
  assert.deepEqual(batches.slice(before), [['b.yaml']]);
});

test('a symlinked file is watched through its link: a new one is read again after its batch, and edits to its target arrive', async (t) => {
  const tmp = await makeTempDir();
  // The target sits in a hidden directory, which the tree does not watch: only the link's own
  // watcher (chokidar) can see it written.
  await tmp.write('.data/c.yaml', 'v: 1\n');
  const { files, batches, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  await watcher.settled();
  let before = batches.length;
  await symlink(join('.data', 'c.yaml'), join(tmp.dir, 'c.yaml'));
  await eventually(() => assert.equal(files.get('c.yaml'), 'v: 1\n'));
  await watcher.settled();
  // chokidar may not have watched the new link in time for its target's first writes.
  assert.deepEqual(batches.slice(before), [['c.yaml'], ['c.yaml']]);
  before = batches.length;
  await writeFile(join(tmp.dir, '.data', 'c.yaml'), 'v: 2\n', { flag: 'r+' });
  await eventually(() => assert.equal(files.get('c.yaml'), 'v: 2\n'));
  await watcher.settled();
  // One write(2) of the same length: one event, which chokidar reports in full: read once.
  assert.deepEqual(batches.slice(before), [['c.yaml']]);
});

test('a regular file replaced by a symlink is watched through the link, and again when it is a file once more', async (t) => {
  const tmp = await makeTempDir();
  await tmp.write('a.yaml', 'v: 1\n');
  await tmp.write('.data/a.yaml', 'v: linked\n');
  const { files, batches, watcher } = await watching(t, tmp.dir, tmp.cleanup);
  await symlink(join('.data', 'a.yaml'), join(tmp.dir, 'a.tmp'));
  await rename(join(tmp.dir, 'a.tmp'), join(tmp.dir, 'a.yaml'));
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: linked\n'));
  await watcher.settled();
  await writeFile(join(tmp.dir, '.data', 'a.yaml'), 'v: linked 2\n');
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: linked 2\n'), {
    what: 'an edit of the target',
  });
  await watcher.settled();
  await writeFile(join(tmp.dir, 'a.tmp'), 'v: plain\n');
  await rename(join(tmp.dir, 'a.tmp'), join(tmp.dir, 'a.yaml'));
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: plain\n'));
  await watcher.settled();
  await writeFile(join(tmp.dir, 'a.yaml'), 'v: plain 2\n');
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: plain 2\n'), { what: 'an edit of the file' });
  // The old target is no longer what a.yaml is: writing it changes nothing.
  await watcher.settled();
  const before = batches.length;
  await writeFile(join(tmp.dir, '.data', 'a.yaml'), 'v: linked 3\n');
  await processed(tmp.dir, files, 'marker.yaml');
  assert.deepEqual(batches.slice(before), [['marker.yaml']], 'the old target is not watched');
  assert.equal(files.get('a.yaml'), 'v: plain 2\n');
});

for (const linked of [false, true]) {
  test(`ten writes 8 ms apart to a ${linked ? 'symlinked' : 'regular'} file: the last one is read${linked ? ' (chokidar drops the writes within 50 ms of one it reported; the recheck reads them)' : ''}`, async (t) => {
    const tmp = await makeTempDir();
    const target = linked ? join(tmp.dir, '.data', 'a.yaml') : join(tmp.dir, 'a.yaml');
    await tmp.write(linked ? '.data/a.yaml' : 'a.yaml', 'v: 1\n');
    if (linked) await symlink(join('.data', 'a.yaml'), join(tmp.dir, 'a.yaml'));
    const { files, watcher } = await watching(t, tmp.dir, tmp.cleanup);
    await watcher.settled();
    assert.equal(files.get('a.yaml'), 'v: 1\n');
    for (let i = 2; i <= 11; i++) {
      await writeFile(target, `v: ${i}\n`);
      await pause(8); // the writer's pace (the case itself), not a wait for the watcher
    }
    await eventually(() => assert.equal(files.get('a.yaml'), 'v: 11\n'));
    await watcher.settled();
    assert.equal(files.get('a.yaml'), 'v: 11\n');
  });
}

/** A clock that moves only when told, and timers that fire only when told; each timer asked is noted. */
class ManualTimers implements Timers {
  at = 0;
  readonly asked: number[] = [];
  private readonly pending = new Map<number, () => void>();
  private next = 0;

  now(): number {
    return this.at;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    this.asked.push(ms);
    this.pending.set(++this.next, fn);
    return this.next;
  }

  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === 'number') this.pending.delete(handle);
  }

  /** Runs the timers due (all of them: the test moved the clock past them). */
  fire(): void {
    const due = [...this.pending.values()];
    this.pending.clear();
    for (const fn of due) fn();
  }
}

test("a steady stream of writes is read at most two quiet periods after its first event (on the watcher's timers)", async (t) => {
  const tmp = await makeTempDir();
  await tmp.write('a.yaml', 'v: 0\n');
  const timers = new ManualTimers();
  const { files, batches } = await watching(t, tmp.dir, tmp.cleanup, timers);
  const before = batches.length;
  // Each write one write(2) of the same length, so one event; the watcher's answer is the timer it asks for.
  const writeAt = async (at: number, v: number, delay: number) => {
    timers.at = at;
    const asked = timers.asked.length;
    await writeFile(join(tmp.dir, 'a.yaml'), `v: ${v}\n`, { flag: 'r+' });
    await eventually(() => assert.ok(timers.asked.length > asked), { what: `the event of write ${v}` });
    assert.equal(timers.asked.at(-1), delay, `the quiet period asked after write ${v}`);
  };
  // debounceMs 20 (watching()): a quiet period of 20 ms, a burst read at most 40 ms after it began.
  await writeAt(0, 1, 20); // a burst begins: a quiet period
  await writeAt(15, 2, 20); // still a full quiet period: the burst is young
  await writeAt(30, 3, 10); // but no later than 40 ms after its first event
  await writeAt(45, 4, 0); // past it: at once
  assert.deepEqual(batches.slice(before), [], 'nothing read before the timer fires');
  timers.fire();
  await eventually(() => assert.equal(files.get('a.yaml'), 'v: 4\n'));
  assert.deepEqual(batches.slice(before), [['a.yaml']], 'the burst read as one batch');
});
