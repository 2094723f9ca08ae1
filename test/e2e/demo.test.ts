// `npm run demo` as a user runs it (dist/demo/main.js), on a copy of examples/config whose echo
// endpoints are moved to free loopback ports: it starts backends on exactly those endpoints and the
// README's proxyless client, prints the 80/20 split of echo-split.yaml, follows an edit of that file
// to 0/100, and on SIGINT stops the control plane and the client it started (by their PIDs) and
// exits 0.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { eventually } from '../support/eventually.js';

const DEMO = fileURLToPath(new URL('../../demo/main.js', import.meta.url));
const EXAMPLES = fileURLToPath(new URL('../../../examples/config', import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  assert.ok(address && typeof address === 'object');
  return address.port;
}

/** Moves a WorkloadEntry of the copy to 127.0.0.1:port (its grpc port). */
function moveWorkload(file: string, port: number): void {
  const doc = parseDocument(readFileSync(file, 'utf8'));
  doc.setIn(['spec', 'address'], '127.0.0.1');
  doc.setIn(['spec', 'ports'], { grpc: port });
  writeFileSync(file, doc.toString());
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface Split {
  readonly calls: number;
  readonly byBackend: Map<string, number>;
  readonly errors: boolean;
}

function parseSplit(line: string): Split | undefined {
  const calls = /^\d\d:\d\d:\d\d {2}(\d+) calls/.exec(line);
  if (!calls) return undefined;
  const byBackend = new Map<string, number>();
  for (const m of line.matchAll(/(\S+@\S+) \d+% \((\d+)\)/g)) byBackend.set(m[1] ?? '', Number(m[2]));
  return { calls: Number(calls[1]), byBackend, errors: line.includes(' errors ') };
}

test('the demo shows the split of echo-split.yaml, follows an edit, and stops everything on SIGINT', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-demo-test-'));
  const config = join(dir, 'config');
  cpSync(EXAMPLES, config, { recursive: true });
  const [p1, p2] = [await freePort(), await freePort()];
  moveWorkload(join(config, 'workloads', 'echo-1.yaml'), p1);
  moveWorkload(join(config, 'workloads', 'echo-2.yaml'), p2);
  const v1 = `v1@127.0.0.1:${p1}`;
  const v2 = `v2@127.0.0.1:${p2}`;

  const demo = spawn(
    process.execPath,
    [DEMO, '--config-dir', config, '--xds-addr', '127.0.0.1:0', '--http-addr', '127.0.0.1:0'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  let stderr = '';
  let buffer = '';
  demo.stdout.setEncoding('utf8');
  demo.stdout.on('data', (chunk: string) => {
    buffer += chunk;
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    lines.push(...parts);
  });
  demo.stderr.setEncoding('utf8');
  demo.stderr.on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
  const pids = (): number[] =>
    lines.flatMap((l) => [...l.matchAll(/\(pid (\d+)\)/g)].map((m) => Number(m[1])));
  t.after(async () => {
    // Only if the test failed before the demo stopped: end what it started, by PID.
    if (demo.exitCode === null) demo.kill('SIGKILL');
    for (const pid of pids()) if (alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const output = (): string => `stdout:\n${lines.join('\n')}\nstderr:\n${stderr}`;

  // The header's lines are separate writes, which may arrive in separate chunks: wait for its last.
  // It names the file as the demo's working directory (this one) reaches it: relative, as a shell
  // would take it (from a clone under /tmp, `../../portolan-demo-test-…/config/…`).
  const editLine = relative(process.cwd(), join(config, 'traffic', 'echo-split.yaml'));
  await eventually(
    () =>
      assert.ok(
        lines.some((l) => l.startsWith('backends ')) && lines.some((l) => l.includes(editLine)),
        output(),
      ),
    { timeoutMs: 30_000 },
  );
  const backendsLine = lines.find((l) => l.startsWith('backends ')) ?? '';
  assert.match(backendsLine, new RegExp(`${v1}, ${v2} `), 'a backend on each endpoint of the config');
  assert.ok(
    lines.some((l) => l.includes(editLine)),
    'names the file to edit',
  );
  const started = pids();
  assert.equal(started.length, 2, `the control plane's and the client's PIDs: ${output()}`);

  // 80/20: both versions answer (a window of calls without v2 is possible, so wait for one with both).
  await eventually(
    () => {
      const both = lines
        .map(parseSplit)
        .some((s) => s && (s.byBackend.get(v1) ?? 0) > 0 && (s.byBackend.get(v2) ?? 0) > 0);
      assert.ok(both, output());
    },
    { timeoutMs: 30_000 },
  );

  const split = join(config, 'traffic', 'echo-split.yaml');
  const text = readFileSync(split, 'utf8');
  assert.match(text, /weight: 80\n[\s\S]*weight: 20\n/);
  const edited = lines.length;
  writeFileSync(split, text.replace('weight: 80', 'weight: 0').replace('weight: 20', 'weight: 100'));

  // 0/100: a whole window of calls, every one answered by v2.
  await eventually(
    () => {
      const all = lines
        .slice(edited)
        .map(parseSplit)
        .some((s) => s && s.calls >= 10 && !s.errors && s.byBackend.get(v2) === s.calls);
      assert.ok(all, output());
    },
    { timeoutMs: 30_000 },
  );

  demo.kill('SIGINT');
  const code = await Promise.race([
    exited,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`the demo did not exit: ${output()}`)), 20_000).unref(),
    ),
  ]);
  assert.equal(code, 0, output());
  assert.ok(lines.includes('stopped: client, backends, control plane'), output());
  assert.deepEqual(
    started.filter((pid) => alive(pid)),
    [],
    'the control plane and the client are gone',
  );
});
