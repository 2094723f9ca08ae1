// How a JSON logger's lines reach stderr, seen from a real reader of the pipe: each line at once
// until batchLogWrites(); then routine lines gather and come within LOG_FLUSH_MS, a warning comes at
// once with the lines before it, in order; batchLogWrites(false) writes at once again; and what
// still waits is written when the process exits.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { LOG_FLUSH_MS } from '../../../log/stderr-lines.js';
import { eventually } from '../../support/eventually.js';

const LOGGER = new URL('../../../log/logger.js', import.meta.url).href;
const LINES = new URL('../../../log/stderr-lines.js', import.meta.url).href;

// Reads commands from stdin: `info X`, `warn X`, `batch`, `unbatch`, `exit`.
const CHILD = `
import { createLogger } from '${LOGGER}';
import { batchLogWrites } from '${LINES}';
import { createInterface } from 'node:readline';
const logger = createLogger('info', 'json');
for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, msg] = line.split(' ');
  if (cmd === 'info') logger.info(msg);
  if (cmd === 'warn') logger.warn(msg);
  if (cmd === 'batch') batchLogWrites();
  if (cmd === 'unbatch') batchLogWrites(false);
  if (cmd === 'exit') process.exit(0);
  process.stdout.write('done\\n');
}
`;

test('log lines: at once, then gathered within the flush interval, warnings at once, the rest at exit', async (t) => {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  const seen: string[] = [];
  let partial = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) seen.push((JSON.parse(line) as { msg: string }).msg);
  });
  let acks = 0;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (acks += chunk.split('done').length - 1));
  const send = async (cmd: string): Promise<void> => {
    const want = acks + 1;
    child.stdin.write(`${cmd}\n`);
    await eventually(() => assert.equal(acks, want), { timeoutMs: 10_000 });
  };
  const settle = () => new Promise((r) => setTimeout(r, 200)); // for a line that must NOT come

  await send('info one');
  await eventually(() => assert.deepEqual(seen, ['one']), { timeoutMs: 5_000 });

  await send('batch');
  const gathered = Date.now();
  await send('info two');
  await send('info three');
  await settle();
  assert.deepEqual(seen, ['one'], 'routine lines wait');
  await eventually(() => assert.deepEqual(seen, ['one', 'two', 'three']), { timeoutMs: 5_000 });
  assert.ok(
    Date.now() - gathered < LOG_FLUSH_MS + 1500,
    'within the flush interval (with slack for a loaded machine)',
  );

  await send('info four');
  await send('warn five');
  assert.deepEqual(seen.slice(3), ['four', 'five'], 'a warning comes at once, after the line before it');

  await send('info six');
  await send('unbatch');
  await eventually(() => assert.deepEqual(seen.slice(5), ['six']), { timeoutMs: 2_000 });
  await send('info seven');
  await eventually(() => assert.deepEqual(seen.slice(6), ['seven']), { timeoutMs: 2_000 });

  await send('batch');
  await send('info eight');
  child.stdin.write('exit\n');
  await once(child, 'exit');
  assert.deepEqual(seen.slice(7), ['eight'], 'written at exit');
});
