// Portolan's Node.js flags (cli/node-flags.ts) reach node however it is started: the `portolan`
// file's own first line (what an installed `portolan` runs, through the kernel's #!), and `npm start`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { NODE_FLAGS } from '../../../cli/node-flags.js';

const MAIN = fileURLToPath(new URL('../../../cli/main.js', import.meta.url));
const PACKAGE = fileURLToPath(new URL('../../../../package.json', import.meta.url));

test('the portolan executable runs node with the flags, through its #! line', () => {
  assert.equal(readFileSync(MAIN, 'utf8').split('\n')[0], `#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`);
  // As npm installs it: executable. node refuses a flag it does not know ("bad option"), so a run
  // that prints the version is one that took them.
  chmodSync(MAIN, statSync(MAIN).mode | 0o111);
  const pkg = JSON.parse(readFileSync(PACKAGE, 'utf8')) as { version: string; scripts: { start: string } };
  assert.match(
    execFileSync(MAIN, ['version'], { encoding: 'utf8' }),
    new RegExp(`^portolan ${pkg.version} \\(Node\\.js v`),
  );
});

test('npm start runs the portolan executable itself, so its #! line is the one list of flags', () => {
  const pkg = JSON.parse(readFileSync(PACKAGE, 'utf8')) as { scripts: { start: string } };
  assert.match(pkg.scripts.start, /&& dist\/cli\/main\.js serve\b/);
  assert.doesNotMatch(pkg.scripts.start, /--[\w-]+(?:=\d+)? dist\/cli/, 'no node flags of its own');
  assert.deepEqual(NODE_FLAGS, [
    '--no-memory-reducer',
    '--min-semi-space-size=8',
    '--heap-growing-percent=100',
    '--expose-gc',
  ]);
});
