// `portolan diff` against a stand-in for POST /debug/diff: what it sends (the candidate's files,
// relative), what it prints (text and -o json), and its exit codes as a process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AdminError } from '../../../cli/admin-client.js';
import { diff, formatDiff } from '../../../cli/diff.js';
import type { DiffView } from '../../../model/admin-api.js';

const MAIN = fileURLToPath(new URL('../../../cli/main.js', import.meta.url));

interface Received {
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly contentType: string | undefined;
  readonly body: { files: { path: string; content: string }[] };
}

let server: Server;
let httpAddr: string;
let top: string;
let dir: string;
const received: Received[] = [];
/** A candidate holding this is refused as too large (413). */
const REFUSE = 'refuse-me';
/** How many requests the stand-in answers 429 (busy with another diff) first. */
let busy = 0;
/** What the stand-in answers next. */
let answer: { status: number; body: unknown } = { status: 200, body: { proxies: [], problems: [] } };

const CHANGED: DiffView = {
  proxies: [
    {
      id: 'ccore-1',
      changes: [
        {
          op: 'change',
          type: 'RDS',
          name: 'echo:8080',
          diff: '   {\n-  "weight": 100\n+  "weight": 50\n   }',
        },
        { op: 'add', type: 'CDS', name: 'outbound|8080|v2|echo', diff: '' },
      ],
    },
    { id: 'grpc-js-1', changes: [{ op: 'remove', type: 'EDS', name: 'outbound|8080|v0|echo', diff: '' }] },
  ],
  problems: [],
  evaluatedMs: 12,
};

async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text;
}

before(async () => {
  server = createServer((req, res) => {
    void readBody(req).then((text) => {
      received.push({
        method: req.method,
        path: req.url,
        contentType: req.headers['content-type'],
        body: JSON.parse(text) as Received['body'],
      });
      if (busy > 0) {
        busy--;
        res.writeHead(429, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'another diff is being evaluated; retry when it is done' }));
        return;
      }
      const refuse = text.includes(REFUSE);
      res.writeHead(refuse ? 413 : answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(refuse ? { error: 'request body over 64 MiB' } : answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  httpAddr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  top = mkdtempSync(join(tmpdir(), 'portolan-diff-'));
  dir = join(top, 'candidate');
  mkdirSync(join(dir, 'traffic'), { recursive: true });
  writeFileSync(join(dir, 'traffic', 'split.yaml'), 'kind: VirtualService\n');
  writeFileSync(join(dir, 'services.yaml'), 'kind: ServiceEntry\n');
  writeFileSync(join(top, 'outside.yaml'), 'kind: Secret\n');
  symlinkSync('../outside.yaml', join(dir, 'leak.yaml'));
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(top, { recursive: true, force: true });
});

function run(args: readonly string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

test('sends the whole candidate as relative paths, JSON, to POST /debug/diff (again while it is busy)', async () => {
  received.length = 0;
  busy = 2;
  answer = { status: 200, body: { proxies: [], problems: [], evaluatedMs: 3 } };
  const result = await diff(dir, httpAddr, 'text');
  assert.equal(received.length, 3);
  assert.deepEqual(received[0], received[2]);
  const req = received[2];
  assert.equal(req?.method, 'POST');
  assert.equal(req?.path, '/debug/diff');
  assert.equal(req?.contentType, 'application/json');
  assert.deepEqual(req?.body, {
    files: [
      { path: 'services.yaml', content: 'kind: ServiceEntry\n' },
      { path: 'traffic/split.yaml', content: 'kind: VirtualService\n' },
    ],
  });
  // The link out of the directory was not sent, and is a problem: exit 1.
  assert.equal(result.exitCode, 1);
  assert.equal(
    result.output,
    [
      'no changes: no connected proxy would be sent anything different',
      'problems:',
      '  leak.yaml: a symlink to ../outside.yaml, outside the candidate directory: not followed',
      '0 proxies affected, evaluated in 3 ms; nothing applied',
      '',
    ].join('\n'),
  );
});

test('text: per proxy its id, one line per change, each ~ followed by its diff; then the problems', () => {
  const text = formatDiff({
    ...CHANGED,
    problems: [
      { file: 'traffic/split.yaml', line: 7, message: 'spec.http[0].route: weights must sum to 100' },
      { proxy: 'envoy-1', type: 'CDS', name: 'outbound|8080||echo', message: 'validate.rules: …' },
    ],
  });
  assert.equal(
    text,
    [
      'ccore-1',
      '  ~ RDS echo:8080',
      '       {',
      '    -  "weight": 100',
      '    +  "weight": 50',
      '       }',
      '  + CDS outbound|8080|v2|echo',
      'grpc-js-1',
      '  - EDS outbound|8080|v0|echo',
      'problems:',
      '  traffic/split.yaml:7: spec.http[0].route: weights must sum to 100',
      '  proxy envoy-1 CDS outbound|8080||echo: validate.rules: …',
      '2 proxies affected, evaluated in 12 ms; nothing applied',
      '',
    ].join('\n'),
  );
});

test('-o json prints the contract shape, the files that could not be sent among the problems', async () => {
  answer = {
    status: 200,
    body: {
      ...CHANGED,
      problems: [{ file: 'traffic/split.yaml', line: 3, message: 'bad' }],
    },
  };
  const result = await diff(dir, httpAddr, 'json');
  assert.equal(result.exitCode, 1);
  assert.deepEqual(JSON.parse(result.output), {
    ...CHANGED,
    problems: [
      {
        file: 'leak.yaml',
        line: 0,
        message: 'a symlink to ../outside.yaml, outside the candidate directory: not followed',
      },
      { file: 'traffic/split.yaml', line: 3, message: 'bad' },
    ],
  });
});

test('exit codes: 0 with no problem, 1 with one, 2 for a usage error or a control plane that refuses or is not there', async () => {
  const clean = join(top, 'clean');
  const refusedDir = join(top, 'refused');
  mkdirSync(clean);
  mkdirSync(refusedDir);
  writeFileSync(join(clean, 'a.yaml'), 'a: 1\n');
  writeFileSync(join(refusedDir, 'a.yaml'), `${REFUSE}\n`);
  answer = { status: 200, body: CHANGED };
  // As processes, at once: each start of the CLI takes a while on a loaded machine.
  const [ok, unknown, refused] = await Promise.all([
    run(['diff', '--config-dir', clean, '--http-addr', httpAddr]),
    run(['diff', '--config-dir', clean, '--http-addr', httpAddr, '--apply']),
    run(['diff', '--config-dir', refusedDir, '--http-addr', httpAddr]),
  ]);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /^ccore-1\n {2}~ RDS echo:8080\n/);
  assert.equal(unknown.status, 2);
  assert.equal(unknown.stderr, "error: unknown option '--apply'\n(see `portolan diff --help`)\n");
  assert.equal(unknown.stdout, '');
  assert.equal(refused.status, 2);
  assert.equal(
    refused.stderr,
    `error: http://${httpAddr}/debug/diff answered 413: request body over 64 MiB\n`,
  );

  answer = {
    status: 200,
    body: { proxies: [], problems: [{ proxy: 'e', type: 'CDS', name: 'c', message: 'rejected' }] },
  };
  const rejected = await diff(clean, httpAddr, 'text');
  assert.equal(rejected.exitCode, 1);
  assert.match(rejected.output, /^problems:\n {2}proxy e CDS c: rejected$/m);

  // Nothing listens: the listener closed, its port is free.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const freePort = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  await assert.rejects(diff(clean, `127.0.0.1:${freePort}`, 'text'), (e: unknown) => {
    assert.ok(e instanceof AdminError);
    assert.match(
      e.message,
      /^cannot reach the Portolan admin API at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/,
    );
    return true;
  });
});
