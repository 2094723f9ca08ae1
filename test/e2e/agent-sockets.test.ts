// End to end, the agent's Unix sockets (issue #45, item 1's default and the socket test gaps), every
// component real: `portolan serve` with its CA, `portolan agent` (the CLI, child processes stopped
// by PID) with no --listen-xds, so local xDS is on RUN_DIR/xds.sock alone; the bootstraps it prints
// and writes point there; the sockets are 0660 in a 0750 directory; the real @grpc/grpc-js-xds
// client calls an echo backend through the socket. A socket left by a crashed agent is taken over;
// a live one, a path over sun_path's 107 bytes and a run directory anyone may write to are refused
// with the reason (exit 2).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { register as registerXds } from '@grpc/grpc-js-xds';
import { startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import {
  callEcho,
  echoClientClass,
  startEchoBackend,
  type EchoBackend,
  type EchoClient,
} from '../support/echo-backend.js';
import { portolanCli as cli } from '../support/portolan-cli.js';
import { freePort } from '../support/workload-certs.js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';

registerXds();

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const run = promisify(execFile);
const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';

let dir: string;
let securePort: number;
let backend: EchoBackend | undefined;
let portolan: PortolanProcess | undefined;
const agents: AgentProcess[] = [];
const clients: EchoClient[] = [];
let token = '';

/** The CLI expected to fail: its exit code and stderr. */
async function failingCli(args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    await run(process.execPath, [MAIN, ...args], { timeout: 20_000 });
  } catch (err) {
    const e = err as { code?: number; stderr?: string };
    return { code: e.code ?? -1, stderr: e.stderr ?? '' };
  }
  throw new Error(`portolan ${args.join(' ')} succeeded`);
}

function agentArgs(runDir: string, extra: string[] = []): string[] {
  return [
    '--ca-addr',
    `127.0.0.1:${securePort}`,
    '--root-cert',
    join(dir, 'root-cert.pem'),
    '--namespace',
    'shop',
    '--service-account',
    'cart',
    '--cert-dir',
    join(dir, 'vm', 'certs'),
    '--data-dir',
    join(dir, 'vm', 'data'),
    '--run-dir',
    runDir,
    '--no-dns',
    ...extra,
  ];
}

/** An agent as started by hand: no --listen-xds (the helper's TCP port undone), the token in the env. */
async function startAgent(runDir: string, extra: string[] = []): Promise<AgentProcess> {
  const agent = await startAgentProcess([...agentArgs(runDir, extra), '--listen-xds', 'off'], {
    env: { PORTOLAN_JOIN_TOKEN: token },
  });
  agents.push(agent);
  return agent;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-sockets-'));
  mkdirSync(join(dir, 'config'));
  backend = await startEchoBackend('v1', '127.0.0.7', 0);
  writeFileSync(
    join(dir, 'config', 'echo.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [echo.shop.internal]
  ports: [{ number: ${backend.port}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.7 }]
`,
  );
  securePort = await freePort();
  portolan = await startPortolanProcess([
    '--config-dir',
    join(dir, 'config'),
    '--data-dir',
    join(dir, 'data'),
    '--secure-xds-addr',
    `127.0.0.1:${securePort}`,
    '--secure-xds-sans',
    'localhost,127.0.0.1',
  ]);
  writeFileSync(join(dir, 'root-cert.pem'), await cli(['ca', 'root', '--data-dir', join(dir, 'data')]));
  token = (
    await cli([
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      'cart',
      '--data-dir',
      join(dir, 'data'),
    ])
  ).trim();
});

after(async () => {
  for (const c of clients) c.close();
  for (const a of agents) await a.stop(5000);
  await portolan?.stop();
  await backend?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('by default local xDS is the Unix socket alone: its modes, the bootstraps, a grpc-js xDS call through it', async () => {
  const runDir = join(dir, 'run');
  const socket = join(runDir, 'xds.sock');
  // What the agent prints follows the default.
  const printed = JSON.parse(await cli(['agent', ...agentArgs(runDir), '--print-bootstrap', 'grpc'])) as {
    xds_servers: { server_uri: string }[];
  };
  assert.equal(printed.xds_servers[0]?.server_uri, `unix:${socket}`);
  const envoy = await cli(['agent', ...agentArgs(runDir), '--print-bootstrap', 'envoy']);
  assert.ok(envoy.includes(JSON.stringify(socket)), 'Envoy’s ADS is the socket');
  const bootstrapFile = join(dir, 'grpc-bootstrap.json');
  const agent = await startAgent(runDir, ['--grpc-bootstrap', bootstrapFile]);
  const serving = agent.logs.find((l) => l.msg === 'portolan agent serving');
  assert.deepEqual(serving?.xds, [`unix:${socket}`], 'no TCP port');
  assert.equal((lstatSync(socket).mode & 0o777).toString(8), '660');
  assert.equal((lstatSync(join(runDir, 'sds.sock')).mode & 0o777).toString(8), '660');
  assert.equal((lstatSync(runDir).mode & 0o777).toString(8), '750');
  const written = readFileSync(bootstrapFile, 'utf8');
  assert.equal((JSON.parse(written) as typeof printed).xds_servers[0]?.server_uri, `unix:${socket}`);
  const Client = echoClientClass();
  const client = new Client(
    `xds:///echo.shop.internal:${backend?.port ?? 0}`,
    grpc.credentials.createInsecure(),
    {
      [BOOTSTRAP_OPTION]: written,
    },
  );
  clients.push(client);
  assert.equal(await callEcho(client, 15_000), 'v1');
});

test('a crashed agent’s socket is taken over; a live socket, a path over 107 bytes, an open run dir are refused', async () => {
  const runDir = join(dir, 'run-2');
  const first = await startAgent(runDir);
  await first.kill(); // SIGKILL: its sockets stay behind
  assert.equal(lstatSync(join(runDir, 'xds.sock')).isSocket(), true, 'a stale socket left behind');
  const second = await startAgent(runDir);
  assert.deepEqual(second.logs.find((l) => l.msg === 'portolan agent serving')?.xds, [
    `unix:${join(runDir, 'xds.sock')}`,
  ]);
  // Another agent on the same sockets while the second serves there.
  const common = ['--status-addr', '127.0.0.1:0', '--token', token];
  const live = await failingCli(['agent', ...agentArgs(runDir, common)]);
  assert.equal(live.code, 2);
  assert.match(live.stderr, /xds\.sock: another process serves on it/);
  const long = join(dir, 'deep', 'd'.repeat(100), 'xds.sock');
  const tooLong = await failingCli([
    'agent',
    ...agentArgs(join(dir, 'run-3'), [...common, '--xds-socket', long]),
  ]);
  assert.equal(tooLong.code, 2);
  assert.match(tooLong.stderr, /a Unix socket path is at most 107 bytes/);
  const open = join(dir, 'open-run');
  mkdirSync(open);
  chmodSync(open, 0o777);
  const refused = await failingCli(['agent', ...agentArgs(open, common)]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /is writable by everyone \(mode 777\)/);
});
