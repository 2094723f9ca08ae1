// A config file whose last read found it on a local filesystem is read again synchronously, without
// libuv's thread pool; every other read keeps the pool and its deadline. Shown with the pool's four
// threads held by opens of FIFOs that have no writer yet: a file read before still reads (with all
// the usual checks), and a file never read before runs into its deadline. Real files, a real FIFO,
// a real mount table.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  type Stats,
  mkdtempSync,
  openSync,
  closeSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  constants,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fsTypeOf, LocalFilesystems, major, minor } from '../../../config-dir/local-filesystems.js';
import { ConfigFileReader, type ReadFs } from '../../../config-dir/read-file.js';

const POOL = Number(process.env.UV_THREADPOOL_SIZE ?? 4);

/** Holds every libuv pool thread in open() of a FIFO without a writer; returns the release. */
function holdThreadPool(dir: string): () => Promise<void> {
  const fifos = Array.from({ length: POOL }, (_, i) => join(dir, `.pool-${i}`));
  const opens = fifos.map((fifo) => {
    execFileSync('mkfifo', [fifo]);
    return open(fifo, 'r'); // blocks its thread until a writer comes
  });
  return async () => {
    // A writer that opens and closes releases each blocked reader.
    const writers = fifos.map((fifo) => openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
    for (const handle of await Promise.all(opens)) await handle.close();
    for (const fd of writers) closeSync(fd);
  };
}

test('a file read before from a local filesystem reads without the thread pool, with every check', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-local-read-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.ok(
    new LocalFilesystems().isLocal(statSync(dir).dev),
    `this test needs ${tmpdir()} on a local filesystem`,
  );
  const reader = new ConfigFileReader({ maxBytes: 64, timeoutMs: 300 });
  const known = join(dir, 'known.yaml');
  writeFileSync(known, 'first: 1\n');
  writeFileSync(join(dir, 'never.yaml'), 'never: 1\n');
  assert.deepEqual(await reader.read(known), { kind: 'text', text: 'first: 1\n' });

  const release = holdThreadPool(dir);
  try {
    await heldPoolReads(reader, dir, known);
  } finally {
    await release();
  }
});

async function heldPoolReads(reader: ConfigFileReader, dir: string, known: string): Promise<void> {
  // The pool is held: a file not read before waits for it, and runs into its deadline.
  assert.deepEqual(await reader.read(join(dir, 'never.yaml')), {
    kind: 'error',
    message: 'read did not finish within 300 ms',
  });
  writeFileSync(known, 'second: 2\n');
  assert.deepEqual(await reader.read(known), { kind: 'text', text: 'second: 2\n' });
  writeFileSync(known, `big: ${'x'.repeat(100)}\n`);
  assert.deepEqual(await reader.read(known), {
    kind: 'error',
    message: 'larger than 64 bytes (106 bytes); not loaded',
  });
  writeFileSync(known, 'third: 3\n');
  assert.deepEqual(await reader.read(known), { kind: 'text', text: 'third: 3\n' });
  unlinkSync(known);
  execFileSync('mkfifo', [known]); // opened O_NONBLOCK, so even a synchronous open returns at once
  assert.deepEqual(await reader.read(known), {
    kind: 'error',
    message: 'not a regular file (a FIFO); only regular files, or symlinks to them, are loaded',
  });
  unlinkSync(known);
  assert.deepEqual(await reader.read(known), { kind: 'gone' });
  // Gone, it is forgotten: its next read is a first read again, through the (still held) pool.
  writeFileSync(known, 'back: 4\n');
  assert.equal((await reader.read(known)).kind, 'error');
}

/** makedev(3), as glibc encodes a device number. */
const makedev = (maj: number, min: number): number =>
  (min & 0xff) +
  (maj & 0xfff) * 2 ** 8 +
  (Math.floor(min / 256) & 0xffffff) * 2 ** 20 +
  Math.floor(maj / 4096) * 2 ** 44;

test('a device counts as local by its filesystem type in the mount table, which is read once per device', () => {
  const mountinfo = [
    '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
    '25 24 0:23 / /dev/shm rw,relatime shared:2 master:1 - tmpfs tmpfs rw,size=24684092k',
    '40 27 0:53 / /mnt/nfs rw,relatime - nfs4 server:/export rw,vers=4.2',
    '41 27 0:54 / /mnt/with\\040space rw - fuse.sshfs host:/ rw',
    '42 27 259:300000 / /big rw - xfs /dev/nvme0n1 rw',
    '43 27 5000:7 / /odd rw - overlay overlay rw',
  ].join('\n');
  let reads = 0;
  const local = new LocalFilesystems(() => {
    reads++;
    return mountinfo;
  });
  assert.equal(local.isLocal(makedev(254, 0)), true);
  assert.equal(local.isLocal(makedev(0, 23)), true, 'tmpfs, past optional fields');
  assert.equal(local.isLocal(makedev(0, 53)), false, 'nfs4');
  assert.equal(local.isLocal(makedev(0, 54)), false, 'fuse');
  assert.equal(local.isLocal(makedev(259, 300000)), true, 'a minor number above 255');
  assert.equal(local.isLocal(makedev(5000, 7)), true, 'a major number above 4095');
  assert.equal(local.isLocal(makedev(8, 1)), false, 'not mounted');
  assert.equal(reads, 7);
  local.isLocal(makedev(254, 0));
  local.isLocal(makedev(0, 53));
  assert.equal(reads, 7, 'answers are kept');
  assert.equal(fsTypeOf(makedev(0, 54), mountinfo), 'fuse.sshfs');
  assert.deepEqual([major(makedev(259, 300000)), minor(makedev(259, 300000))], [259, 300000]);
});

test('a file that grows while it is read is read to its end, and past the cap it is too large', async () => {
  // The descriptor's size says 10 bytes; the file holds more by the time it is read.
  const growing = (content: Buffer): ReadFs => ({
    open: () =>
      Promise.resolve({
        stat: () =>
          Promise.resolve({
            ...statSync(tmpdir()),
            size: 10,
            isDirectory: () => false,
            isFile: () => true,
          } as Stats),
        read: (buffer: Buffer, offset: number, length: number, position: number) =>
          Promise.resolve({
            bytesRead: content.copy(buffer, offset, position, Math.min(content.length, position + length)),
          }),
        close: () => Promise.resolve(),
      }),
  });
  const text = 'grown: ' + 'x'.repeat(200_000) + '\n';
  const reader = new ConfigFileReader({ maxBytes: 1_000_000, timeoutMs: 5000 }, growing(Buffer.from(text)));
  assert.deepEqual(await reader.read('/grown.yaml'), { kind: 'text', text });
  const capped = new ConfigFileReader({ maxBytes: 100_000, timeoutMs: 5000 }, growing(Buffer.from(text)));
  assert.deepEqual(await capped.read('/grown.yaml'), {
    kind: 'error',
    message: 'larger than 100000 bytes (100001 bytes); not loaded',
  });
});
