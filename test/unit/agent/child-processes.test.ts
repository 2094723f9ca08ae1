// What the agent's children get and how they end (issue #45, items 7 and 12): an exec probe's
// timeout is enforced on its whole process group (a command that ignores SIGTERM, and what it
// started, are gone; the check fails at the timeout), and neither the supervised command nor an
// exec probe sees the join token or any other secret the agent reads from its environment.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Supervisor } from '../../../agent/supervisor.js';
import { checkOnce } from '../../../agent/workload/probe.js';
import { silentLogger } from '../../../log/logger.js';
import { eventually } from '../../support/eventually.js';

const dir = mkdtempSync(join(tmpdir(), 'portolan-children-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('an exec probe that ignores SIGTERM fails at its timeout, and its process group is killed', async () => {
  const pids = join(dir, 'pids');
  // The shell ignores SIGTERM and starts a child that does too; neither would ever exit on its own.
  const script = `trap '' TERM; sh -c "trap '' TERM; sleep 60" & echo $$ $! > ${pids}; wait`;
  const result = await Promise.race([
    checkOnce({ exec: { command: ['sh', '-c', script] }, timeoutSeconds: 1 }, '127.0.0.1'),
    new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 10_000).unref()),
  ]);
  assert.notEqual(result, 'hung', 'the check ended at its timeout');
  assert.deepEqual(result, { ok: false, message: `exec sh -c ${script}: no exit within 1000 ms` });
  const [shell = 0, child = 0] = readFileSync(pids, 'utf8').trim().split(' ').map(Number);
  await eventually(() => !alive(shell) && !alive(child), { what: 'the probe’s process group is gone' });
});

test('the supervised command and exec probes do not get the join token or other secrets', async (t) => {
  const saved = { ...process.env };
  t.after(() => {
    for (const k of [
      'PORTOLAN_JOIN_TOKEN',
      'PORTOLAN_AGENT_TOKEN',
      'PORTOLAN_DB_PASSWORD',
      'PORTOLAN_NAMESPACE',
    ])
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
  });
  process.env.PORTOLAN_JOIN_TOKEN = 'join-secret';
  process.env.PORTOLAN_AGENT_TOKEN = 'flag-secret';
  process.env.PORTOLAN_DB_PASSWORD = 'db-secret';
  process.env.PORTOLAN_NAMESPACE = 'shop';
  const out = join(dir, 'env');
  const supervisor = new Supervisor({
    command: 'sh',
    args: ['-c', `env > ${out}.tmp && mv ${out}.tmp ${out}; sleep 60`],
    logger: silentLogger,
    drainMs: 2000,
  });
  supervisor.start();
  t.after(() => supervisor.stop());
  await eventually(() => existsSync(out), { what: 'the command wrote its environment' });
  const env = readFileSync(out, 'utf8');
  assert.doesNotMatch(env, /secret/);
  assert.match(env, /^PORTOLAN_NAMESPACE=shop$/m, 'other variables are passed on');
  // An exec probe that fails if it sees any of them.
  const probe = await checkOnce(
    { exec: { command: ['sh', '-c', 'env | grep -q secret && exit 1; exit 0'] }, timeoutSeconds: 5 },
    '127.0.0.1',
  );
  assert.deepEqual(probe, { ok: true, message: '' });
});
