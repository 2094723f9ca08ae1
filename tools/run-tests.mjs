// Runs every compiled *.test.js under dist/test (Node 20's --test takes no globs, and a directory
// argument would also run the support modules as test files). Extra args go to `node --test`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const files = readdirSync('dist/test', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.js'))
  .map((f) => join('dist/test', f))
  .sort();
if (files.length === 0) {
  console.error('no test files under dist/test: run the build first');
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=2', '--test-timeout=180000', ...process.argv.slice(2), ...files],
  {
    stdio: 'inherit',
  },
);
process.exit(result.status ?? 1);
