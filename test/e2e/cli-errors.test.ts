// What a new user sees when `portolan serve` cannot start or a flag is wrong (issue #19): one line
// that names the flag, no library wording, no stray log line, no JSON stack; a bad flag value prints
// the subcommand's help; and the log format: JSON when stderr is not a terminal, readable on request.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function serve(args: readonly string[]): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, 'serve', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stderr: r.stderr };
}

async function occupied(t: TestContext): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return (server.address() as AddressInfo).port;
}

const base = (dir: string): string[] => [
  '--registries',
  'mock',
  '--data-dir',
  join(dir, 'data'),
  '--secure-xds-addr',
  'off',
];

test('an xDS port in use is one line naming the flag and address', async (t) => {
  const port = await occupied(t);
  const r = serve([...base(tempDir(t)), '--xds-addr', `127.0.0.1:${port}`, '--http-addr', '127.0.0.1:0']);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `error: --xds-addr 127.0.0.1:${port} is already in use\n`);
});

test('an admin port in use is one line naming the flag and address', async (t) => {
  const port = await occupied(t);
  const r = serve([...base(tempDir(t)), '--xds-addr', '127.0.0.1:0', '--http-addr', `127.0.0.1:${port}`]);
  assert.equal(r.status, 2);
  assert.equal(r.stderr, `error: --http-addr 127.0.0.1:${port} is already in use\n`);
});

test('a missing --config-dir is one clear line', (t) => {
  const dir = tempDir(t);
  const missing = join(dir, 'no-such-dir');
  const r = serve([
    ...base(dir),
    '--registries',
    'config',
    '--config-dir',
    missing,
    '--xds-addr',
    '127.0.0.1:0',
    '--http-addr',
    '127.0.0.1:0',
  ]);
  assert.equal(r.status, 2);
  assert.equal(
    r.stderr,
    `error: --config-dir ${missing} does not exist (create it, or point --config-dir at your config directory)\n`,
  );
});

test("a bad flag value prints the reason and where serve's help is, not the help (issue #48)", () => {
  const r = serve(['--registries', 'mock', '--secure-xds-addr', 'off', '--push-window', 'soon']);
  assert.equal(r.status, 2);
  assert.equal(
    r.stderr,
    'error: --push-window: expected a duration like 100ms or 1s, got "soon"\n(see `portolan serve --help`)\n',
  );
  const history = spawnSync(process.execPath, [MAIN, 'history', '--limit', 'x'], { encoding: 'utf8' });
  assert.equal(
    history.stderr,
    'error: --limit: expected a positive integer, got "x"\n(see `portolan history --help`)\n',
  );
  const token = spawnSync(process.execPath, [MAIN, 'token', 'create', '--namespace', 'ns'], {
    encoding: 'utf8',
  });
  assert.equal(
    token.stderr,
    "error: required option '--service-account <sa>' not specified\n(see `portolan token create --help`)\n",
  );
});

test('a bad --config-debounce is refused before anything starts', (t) => {
  const dir = tempDir(t);
  const r = serve([
    ...base(dir),
    '--registries',
    'config',
    '--config-dir',
    dir,
    '--config-debounce',
    'quick',
  ]);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /^error: --config-debounce: expected a duration like 100ms or 1s, got "quick"\n/);
});

/** Starts serve with `args` and `env`, returns its stderr up to the "portolan serving" line, then stops it. */
async function firstLines(
  t: TestContext,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<string> {
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...env },
  });
  t.after(() => {
    if (child.exitCode === null && child.pid) process.kill(child.pid, 'SIGKILL');
  });
  let text = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (c: string) => (text += c));
  const deadline = Date.now() + 20_000;
  while (!text.includes('portolan serving')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`serve did not start: ${text}`);
    await sleep(50);
  }
  if (child.pid) process.kill(child.pid, 'SIGTERM');
  return text;
}

test('logs are JSON lines when stderr is not a terminal, and readable lines with --log-format pretty', async (t) => {
  const dir = tempDir(t);
  const args = [...base(dir), '--xds-addr', '127.0.0.1:0', '--http-addr', '127.0.0.1:0'];
  const json = await firstLines(t, args);
  for (const line of json.trim().split('\n')) assert.doesNotThrow(() => JSON.parse(line), line);

  const pretty = await firstLines(t, [...args, '--log-format', 'pretty'], { FORCE_COLOR: '1' });
  const serving = pretty.split('\n').find((l) => l.includes('portolan serving')) ?? '';
  assert.ok(!serving.trimStart().startsWith('{'), serving);
  assert.match(serving, /\u001b\[32mINFO\u001b\[39m/, 'the level is coloured');
  assert.match(serving, /xdsAddress=127\.0\.0\.1:\d+/);
});
