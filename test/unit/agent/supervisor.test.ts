// The command `portolan agent -- CMD` supervises (Envoy in production; Envoy cannot be installed here,
// so a stand-in Node child): restarted with backoff when it exits, drained on stop — SIGTERM
// forwarded and waited for, SIGKILL once --drain-timeout has passed.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Supervisor } from '../../../agent/supervisor.js';
import { createLogger } from '../../../log/logger.js';
import { eventually } from '../../support/eventually.js';

const dir = mkdtempSync(join(tmpdir(), 'portolan-supervisor-'));
const logger = createLogger('silent');
const fast = { initialMs: 50, maxMs: 100, jitter: 0 };

after(() => rmSync(dir, { recursive: true, force: true }));

function standIn(script: string, overrides: Partial<ConstructorParameters<typeof Supervisor>[0]> = {}) {
  let restarts = 0;
  const supervisor = new Supervisor({
    command: process.execPath,
    args: ['-e', script],
    logger,
    backoff: fast,
    onRestart: () => (restarts += 1),
    ...overrides,
  });
  return { supervisor, restarts: () => restarts };
}

test('a command that exits is started again, with a new process, and counted', async () => {
  const { supervisor, restarts } = standIn('setTimeout(() => process.exit(3), 200)');
  supervisor.start();
  const first = supervisor.pid;
  assert.ok(first);
  try {
    await eventually(() => restarts() >= 2 && supervisor.pid !== undefined, {
      timeoutMs: 15_000,
      what: 'two restarts',
    });
    assert.notEqual(supervisor.pid, first);
    assert.equal(supervisor.restarts, restarts());
    assert.equal(supervisor.lastExit?.code, 3);
  } finally {
    await supervisor.stop();
  }
  const after = restarts();
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal(restarts(), after, 'a stopped supervisor restarts nothing');
  assert.equal(supervisor.running(), false);
});

test('stop drains: SIGTERM reaches the command, which finishes and exits on its own', async () => {
  const marker = join(dir, 'drained');
  const { supervisor } = standIn(
    `process.on('SIGTERM', () => { require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'drained'); setTimeout(() => process.exit(0), 200); }); require('node:fs').writeFileSync(${JSON.stringify(marker + '.up')}, ''); setInterval(() => {}, 1000);`,
    { drainMs: 20_000 },
  );
  supervisor.start();
  await eventually(() => existsSync(`${marker}.up`), { timeoutMs: 15_000, what: 'its SIGTERM handler' });
  await supervisor.stop();
  assert.equal(readFileSync(marker, 'utf8'), 'drained');
  assert.deepEqual([supervisor.lastExit?.code, supervisor.lastExit?.signal], [0, null]);
});

test('a command that ignores SIGTERM is killed once the drain timeout has passed', async () => {
  const marker = join(dir, 'ignored');
  const { supervisor } = standIn(
    `process.on('SIGTERM', () => require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ignored')); require('node:fs').writeFileSync(${JSON.stringify(marker + '.up')}, ''); setInterval(() => {}, 1000);`,
    { drainMs: 500 },
  );
  supervisor.start();
  await eventually(() => existsSync(`${marker}.up`), { timeoutMs: 15_000, what: 'its SIGTERM handler' });
  await supervisor.stop();
  assert.ok(existsSync(marker), 'it was sent SIGTERM first');
  assert.equal(supervisor.lastExit?.signal, 'SIGKILL');
});
