// Reading a candidate directory for `portolan diff` (cli/candidate-files.ts): the files the config
// directory would load, as relative paths, and nothing from outside the directory.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import {
  CandidateError,
  DEFAULT_CANDIDATE_LIMITS,
  diffRequestBody,
  readCandidate,
} from '../../../cli/candidate-files.js';
import { OptionError } from '../../../cli/options.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-candidate-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function write(path: string, text: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
}

test('the files the config directory would load: config extensions, hidden segments skipped, relative paths', async (t) => {
  const dir = join(tempDir(t), 'candidate');
  write(join(dir, 'b.yaml'), 'b: 1\n');
  write(join(dir, 'a/one.yml'), 'one: 1\n');
  write(join(dir, 'a/two.JSON'), '{}');
  write(join(dir, 'README.md'), '# not config\n');
  write(join(dir, '.swap.yaml'), 'hidden: 1\n');
  write(join(dir, '.git/config.yaml'), 'hidden: 1\n');
  // A ConfigMap volume: the key is a link into the hidden `..data`, which is read through the link only.
  write(join(dir, '..2026_12_02/echo.yaml'), 'echo: 1\n');
  symlinkSync('..2026_12_02', join(dir, '..data'));
  symlinkSync('..data/echo.yaml', join(dir, 'echo.yaml'));
  // A link back into the tree is listed once.
  symlinkSync('.', join(dir, 'a/loop'));

  const read = await readCandidate(dir);
  assert.deepEqual(read.problems, []);
  assert.deepEqual(read.files.map((f) => [f.path, f.content]).sort(), [
    ['a/one.yml', 'one: 1\n'],
    ['a/two.JSON', '{}'],
    ['b.yaml', 'b: 1\n'],
    ['echo.yaml', 'echo: 1\n'],
  ]);
});

test('a symlink out of the directory is a problem naming the link, and its target is not read', async (t) => {
  const top = tempDir(t);
  const dir = join(top, 'candidate');
  write(join(top, 'secret.yaml'), 'secret: do-not-send\n');
  write(join(top, 'elsewhere/more.yaml'), 'secret: do-not-send\n');
  write(join(dir, 'ok.yaml'), 'ok: 1\n');
  symlinkSync('../secret.yaml', join(dir, 'leak.yaml'));
  mkdirSync(join(dir, 'sub'));
  symlinkSync(join(top, 'elsewhere'), join(dir, 'sub/linked'));
  // A link out that the config directory would not load either (not a config file) is no problem.
  symlinkSync('../secret.yaml', join(dir, 'notes.txt'));

  const read = await readCandidate(dir);
  assert.deepEqual(
    read.files.map((f) => f.path),
    ['ok.yaml'],
  );
  assert.deepEqual(read.problems, [
    {
      file: 'leak.yaml',
      line: 0,
      message: 'a symlink to ../secret.yaml, outside the candidate directory: not followed',
    },
    {
      file: 'sub/linked',
      line: 0,
      message: `a symlink to ${join(top, 'elsewhere')}, outside the candidate directory: not followed`,
    },
  ]);
  assert.doesNotMatch(diffRequestBody(read.files), /do-not-send/);
});

test('a file over the size limit, or not a regular file, is a problem on that file alone', async (t) => {
  const dir = tempDir(t);
  write(join(dir, 'big.yaml'), 'x'.repeat(2000));
  write(join(dir, 'small.yaml'), 'x: 1\n');
  execFileSync('mkfifo', [join(dir, 'pipe.yaml')]);
  const read = await readCandidate(dir, { ...DEFAULT_CANDIDATE_LIMITS, maxFileBytes: 1000 });
  assert.deepEqual(
    read.files.map((f) => f.path),
    ['small.yaml'],
  );
  assert.deepEqual(
    read.problems.map((p) => [p.file, p.line]),
    [
      ['big.yaml', 0],
      ['pipe.yaml', 0],
    ],
  );
  assert.match(read.problems[0]?.message ?? '', /larger than 1000 bytes/);
  assert.match(read.problems[1]?.message ?? '', /not a regular file \(a FIFO\)/);
});

test('the whole candidate is bounded: config files, entries looked at, and bytes', async (t) => {
  const dir = tempDir(t);
  for (let i = 0; i < 5; i++) write(join(dir, `f${i}.yaml`), 'x'.repeat(100));
  for (let i = 0; i < 5; i++) write(join(dir, `other${i}.txt`), '');
  const limits = DEFAULT_CANDIDATE_LIMITS;
  await assert.rejects(readCandidate(dir, { ...limits, maxFiles: 4 }), (e: unknown) => {
    assert.ok(e instanceof CandidateError);
    assert.match(e.message, /more than 4 config files/);
    return true;
  });
  await assert.rejects(readCandidate(dir, { ...limits, maxEntries: 9 }), /more than 9 entries/);
  await assert.rejects(readCandidate(dir, { ...limits, maxBodyBytes: 450 }), CandidateError);
  const read = await readCandidate(dir, { ...limits, maxFiles: 5, maxEntries: 10 });
  assert.equal(read.files.length, 5);
  // JSON escaping counts: the body, not the bytes on disk, is what the server bounds.
  assert.throws(
    () => diffRequestBody([{ path: 'q.yaml', content: '"'.repeat(300) }], { ...limits, maxBodyBytes: 500 }),
    CandidateError,
  );
});

test('a missing or non-directory --config-dir is a usage error', async (t) => {
  const dir = tempDir(t);
  write(join(dir, 'file.yaml'), '');
  await assert.rejects(readCandidate(join(dir, 'nope')), (e: unknown) => {
    assert.ok(e instanceof OptionError);
    assert.equal(e.message, `--config-dir ${join(dir, 'nope')} does not exist`);
    return true;
  });
  await assert.rejects(readCandidate(join(dir, 'file.yaml')), OptionError);
});
