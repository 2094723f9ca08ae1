// The guard that keeps a test file's servers from outliving it: a process that registered its
// child and then gets the runner's SIGTERM (a file past its time limit) takes the child with it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { eventually } from '../../support/eventually.js';

const GUARD = fileURLToPath(new URL('../../support/kill-on-exit.js', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`a ${signal} to the test process kills the children it registered`, async (t) => {
    // The "test process": registers a long sleep as its child, prints the child's pid, waits.
    const script = `
      const { spawn } = await import('node:child_process');
      const { killOnExit } = await import(${JSON.stringify(GUARD)});
      const child = spawn('sleep', ['60'], { stdio: 'ignore' });
      killOnExit(child);
      console.log(child.pid);
      setInterval(() => {}, 1000);
    `;
    const parent = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    t.after(() => parent.kill('SIGKILL'));
    const [line] = (await once(parent.stdout, 'data')) as [Buffer];
    const pid = Number(line.toString().trim());
    assert.ok(pid > 0 && alive(pid), 'the child runs');
    t.after(() => {
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    });
    parent.kill(signal);
    const [, endedBy] = (await once(parent, 'exit')) as [number | null, string | null];
    assert.equal(endedBy, signal, 'the test process still dies of the signal');
    await eventually(() => assert.equal(alive(pid), false, 'the child is gone'));
  });
}
