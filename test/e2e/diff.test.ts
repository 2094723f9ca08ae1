// `portolan diff` against `portolan serve` with the real grpc-js-xds and gRPC C-core clients calling
// an echo service through a VirtualService (issue #47, item 1): a traffic-split change is listed for
// both clients as a route change with the new weights, and nothing is applied (the calls keep
// landing where they did, the proxies were sent nothing); a broken file exits 1 naming the file and
// its line; a symlink out of the candidate is refused, not read; a usage error and an unreachable
// control plane exit 2. One mesh for the file; the CLI runs are made at once.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { DiffView } from '../../model/admin-api.js';
import type { SynczView } from '../../model/admin-api.js';
import { startCcoreEchoStream } from '../support/ccore-client.js';
import type { CallStream } from '../support/call-stream.js';
import { callEcho, startEchoBackend, type EchoBackend, type EchoClient } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { PORTOLAN_MAIN } from '../support/portolan-cli.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { xdsEchoClient } from '../support/xds-client.js';

const HOST = 'echo.diff.internal';
const GRPC_JS = 'diff-grpc-js';
const CCORE = 'diff-ccore';
const SPLIT_FILE = 'traffic/echo-split.yaml';

const split = (v1: number, v2: number): string => `apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: ${HOST}
  subsets: [{ name: v1, labels: { version: v1 } }, { name: v2, labels: { version: v2 } }]
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: echo-split, namespace: default }
spec:
  hosts: [${HOST}]
  http:
    - route:
        - { destination: { host: ${HOST}, subset: v1 }, weight: ${v1} }
        - { destination: { host: ${HOST}, subset: v2 }, weight: ${v2} }
`;

// Line 8 holds the bad weight (`weight: lots`).
const BROKEN = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: { name: broken, namespace: default }
spec:
  hosts: [${HOST}]
  http:
    - route:
        - { destination: { host: ${HOST}, subset: v2 }, weight: lots }
`;

let top: string;
let live: string;
let portolan: PortolanProcess;
let httpAddr: string;
let client: EchoClient;
let ccore: CallStream;
const backends: EchoBackend[] = [];

before(async () => {
  top = mkdtempSync(join(tmpdir(), 'portolan-diff-e2e-'));
  live = join(top, 'config');
  mkdirSync(join(live, 'traffic'), { recursive: true });
  const v1 = await startEchoBackend('v1', '127.0.0.1');
  backends.push(v1, await startEchoBackend('v2', '127.0.0.2', v1.port));
  writeFileSync(
    join(live, 'echo.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  ports: [{ number: ${v1.port}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  workloadSelector: { labels: { app: echo } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: echo-v1, namespace: default }
spec: { address: 127.0.0.1, ports: { grpc: ${v1.port} }, labels: { app: echo, version: v1 } }
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: { name: echo-v2, namespace: default }
spec: { address: 127.0.0.2, ports: { grpc: ${v1.port} }, labels: { app: echo, version: v2 } }
`,
  );
  // Everything to v1 now: where a call lands tells whether the candidate's split was applied.
  writeFileSync(join(live, SPLIT_FILE), split(100, 0));
  portolan = await startPortolanProcess([
    '--registries',
    'config',
    '--config-dir',
    live,
    '--data-dir',
    join(top, 'data'),
    '--log-format',
    'json',
  ]);
  httpAddr = portolan.httpBase.replace(/^http:\/\//, '');
  const target = `xds:///${HOST}:${v1.port}`;
  client = xdsEchoClient(target, portolan.xdsAddress, GRPC_JS);
  ccore = startCcoreEchoStream(target, portolan.xdsAddress, CCORE, 100_000, { intervalMs: 50 });
  await eventually(async () => assert.equal(await callEcho(client, 2000), 'v1'), {
    timeoutMs: 20_000,
    what: 'a call of the grpc-js-xds client landing on v1',
  });
  await eventually(() => ccore.results.some((r) => r.ok && r.backend === 'v1'), {
    timeoutMs: 30_000,
    what: 'a call of the C-core client landing on v1',
  });
  await eventually(
    async () =>
      assert.deepEqual(syncStates(await syncz()), [
        [CCORE, 'SYNCED'],
        [GRPC_JS, 'SYNCED'],
      ]),
    {
      timeoutMs: 10_000,
      what: 'both clients SYNCED',
    },
  );
});

after(async () => {
  client?.close();
  await ccore?.stop();
  await portolan?.stop();
  await Promise.all(backends.map((b) => b.stop()));
  if (top) rmSync(top, { recursive: true, force: true });
});

async function syncz(): Promise<SynczView> {
  const res = await fetch(`${portolan.httpBase}/debug/syncz`);
  return (await res.json()) as SynczView;
}

function syncStates(view: SynczView): [string, string][] {
  return view.proxies.map((p): [string, string] => [p.node, p.state]).sort();
}

/** Per proxy and type, what it was sent and what it ACKed. */
function versions(view: SynczView): Record<string, Record<string, [string | null, string | null]>> {
  return Object.fromEntries(
    view.proxies.map((p) => [
      p.node,
      Object.fromEntries(Object.entries(p.types).map(([t, s]) => [t, [s.sentVersion, s.ackedVersion]])),
    ]),
  );
}

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function cli(args: readonly string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [PORTOLAN_MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** A copy of the live directory, with `edit` applied to it. */
function candidate(name: string, edit: (dir: string) => void): string {
  const dir = join(top, name);
  cpSync(live, dir, { recursive: true });
  edit(dir);
  return dir;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('diff of a traffic-split change, of a broken file and a link out of DIR, with a bad flag, with no control plane', async () => {
  const changed = candidate('changed', (dir) => writeFileSync(join(dir, SPLIT_FILE), split(50, 50)));
  // A broken file, and a link out of DIR to a file that would change the split.
  writeFileSync(join(top, 'outside.yaml'), BROKEN.replace('lots', '100'));
  const broken = candidate('broken', (dir) => {
    writeFileSync(join(dir, 'traffic/broken.yaml'), BROKEN);
    symlinkSync('../../outside.yaml', join(dir, 'traffic/outside.yaml'));
  });
  const liveSplit = readFileSync(join(live, SPLIT_FILE), 'utf8');
  const before = await syncz();
  const at = { http: '--http-addr', addr: httpAddr };
  const [text, bad, unknown, unreachable] = await Promise.all([
    cli(['diff', '--config-dir', changed, at.http, at.addr]),
    cli(['diff', '--config-dir', broken, at.http, at.addr, '-o', 'json']),
    cli(['diff', '--config-dir', changed, at.http, at.addr, '--apply']),
    freePort().then((port) => cli(['diff', '--config-dir', changed, at.http, `127.0.0.1:${port}`])),
  ]);

  // The split: both clients by node id, each with its route configuration changed to the new weights.
  assert.equal(text.status, 0, text.stdout + text.stderr);
  for (const id of [CCORE, GRPC_JS]) {
    const section = text.stdout.split(/^(?=\S)/m).find((s) => s.startsWith(`${id}\n`));
    assert.ok(section, `${id} is listed:\n${text.stdout}`);
    assert.match(section, /^ {2}~ RDS \S+$/m);
    assert.match(section, /^ {4}-.*"cluster": "outbound\|\d+\|v1\|/m, 'the lone v1 cluster, gone');
    assert.match(section, /^ {4}\+.*"name": "outbound\|\d+\|v2\|/m, 'v2 among the weighted clusters');
    assert.match(section, /^ {4}\+.*"value": 50/m, 'the new weight, added');
  }
  assert.match(text.stdout, /^problems: none\n2 proxies affected, evaluated in \d+ ms; nothing applied\n$/m);

  // A broken file and a link out of DIR: exit 1, each named relative to DIR, the file with its
  // line; the link's target neither read nor evaluated.
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  const badView = JSON.parse(bad.stdout) as DiffView;
  assert.deepEqual(
    badView.problems.map((p) => ('file' in p ? [p.file, p.line] : [p.proxy])),
    [
      ['traffic/broken.yaml', 8],
      ['traffic/outside.yaml', 0],
    ],
  );
  assert.match(badView.problems[0]?.message ?? '', /weight/);
  assert.equal(
    badView.problems[1]?.message,
    'a symlink to ../../outside.yaml, outside the candidate directory: not followed',
  );
  assert.deepEqual(badView.proxies, []);

  assert.equal(unknown.status, 2);
  assert.match(unknown.stderr, /^error: unknown option '--apply'/);
  assert.equal(unreachable.status, 2);
  assert.match(unreachable.stderr, /^error: cannot reach the Portolan admin API/);

  // Nothing applied: the live directory as it was, no proxy sent anything, calls where they were.
  assert.equal(readFileSync(join(live, SPLIT_FILE), 'utf8'), liveSplit);
  assert.deepEqual(versions(await syncz()), versions(before));
  for (let i = 0; i < 5; i++) assert.equal(await callEcho(client, 5000), 'v1');
  const seen = ccore.results.length;
  await eventually(() => ccore.results.length >= seen + 5, { what: '5 more C-core calls' });
  assert.deepEqual([...new Set(ccore.results.slice(seen).map((r) => r.backend))], ['v1']);
  assert.deepEqual(versions(await syncz()), versions(before));
});
