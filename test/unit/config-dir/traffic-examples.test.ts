// docs/traffic.md shows the files of examples/traffic/ (which the end-to-end traffic test loads):
// each must appear in the page verbatim, and load with no errors or warnings.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../../../config-dir/load-file.js';

/** The repository root: found above this (compiled) file, else the working directory. */
function repoRoot(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'examples', 'traffic'))) return dir;
  }
  return resolve('.');
}

const root = repoRoot();
const files = readdirSync(join(root, 'examples', 'traffic')).filter((f) => f.endsWith('.yaml'));
const page = readFileSync(join(root, 'docs', 'traffic.md'), 'utf8');

test('examples/traffic has the files the page and the end-to-end test use', () => {
  assert.deepEqual(files.sort(), [
    'canary.yaml',
    'destination-rule.yaml',
    'echo-service.yaml',
    'fault-injection.yaml',
    'header-routing.yaml',
    'retries-timeouts.yaml',
  ]);
});

for (const file of files) {
  test(`examples/traffic/${file} is shown verbatim in docs/traffic.md and loads cleanly`, () => {
    const text = readFileSync(join(root, 'examples', 'traffic', file), 'utf8');
    assert.ok(page.includes('```yaml\n' + text + '```'), `${file} is not in docs/traffic.md as written`);
    const load = loadConfigFile(file, text);
    assert.deepEqual([load.errors, load.warnings], [[], []]);
    assert.ok(load.resources.length > 0);
  });
}
