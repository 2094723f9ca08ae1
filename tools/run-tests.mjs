// Runs every compiled *.test.js under dist/test (Node 20's --test takes no globs, and a directory
// argument would also run the support modules as test files). Extra args go to `node --test`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

// The slowest files (over 15 s each in a full run, slowest first; 2026-11-28) start first: with two
// files at a time, one of them starting last would run on alone while the other slot idles. A name
// missing here just runs in its alphabetical place.
const SLOW_FIRST = [
  'e2e/package.test.js',
  'e2e/ha-postgres.test.js',
  'e2e/ca-hardening.test.js',
  'e2e/ha-postgres-failover.test.js',
  'e2e/ca-vm-onboarding.test.js',
  'e2e/vm-onboarding.test.js',
  'e2e/agent-vm.test.js',
  'e2e/serve.test.js',
  'e2e/store-crash.test.js',
  'e2e/ops.test.js',
  'e2e/dashboard.test.js',
  'e2e/cli-errors.test.js',
  'integration/consul-faults.test.js',
].map((f) => join('dist/test', f));

const found = readdirSync('dist/test', { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.test.js'))
  .map((f) => join('dist/test', f))
  .sort();
const slow = SLOW_FIRST.filter((f) => found.includes(f));
const files = [...slow, ...found.filter((f) => !slow.includes(f))];
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
