// The packages a VM fleet installs (issue #48, tools/package.mjs, docs/install.md), built here from
// this checkout and never installed on this machine: the .deb is inspected (control fields, files,
// conffiles, maintainer scripts) and extracted with dpkg-deb -x, the tarball unpacked elsewhere,
// and each is run in a mount namespace where the machine's Node.js is masked (an empty file bound
// over its binary), so what runs is what the package carries. The extracted package runs `version`,
// `serve`, `vm bundle` beside that serve, and an agent configured by the bundle's agent.env alone
// (plus loopback ports and this test's directories); a real @grpc/grpc-js-xds client calls an echo
// service through that agent. The units pass `systemd-analyze verify` with the extracted
// /usr/bin/portolan overlaid on /usr/bin in the namespace. Built with PORTOLAN_PACKAGE_FAST=1: the
// same files, less compressed.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { register as registerXds } from '@grpc/grpc-js-xds';
import { NODE_FLAGS } from '../../cli/node-flags.js';
import { callEcho, echoClientClass, startEchoBackend, type EchoBackend } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { killOnExit } from '../support/kill-on-exit.js';

registerXds();

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const VERSION = pkg.version;
const DEB = `portolan_${VERSION}-1_amd64.deb`;
const TARBALL = `portolan-${VERSION}-linux-x64.tar.gz`;
const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';
const run = promisify(execFile);

let dir: string;
let extracted: string; // the .deb's files, as dpkg-deb -x puts them
let unpacked: string; // the tarball's top folder
let mask: string; // the empty file bound over the machine's node
const children: ChildProcess[] = [];
const backends: EchoBackend[] = [];

before(
  async () => {
    dir = mkdtempSync(join(tmpdir(), 'portolan-package-'));
    await run(process.execPath, [join(ROOT, 'tools', 'package.mjs')], {
      cwd: ROOT,
      env: { ...process.env, PORTOLAN_PACKAGE_OUT: join(dir, 'pkg'), PORTOLAN_PACKAGE_FAST: '1' },
      timeout: 540_000,
      maxBuffer: 1 << 22,
    });
    extracted = join(dir, 'deb');
    execFileSync('dpkg-deb', ['-x', join(dir, 'pkg', DEB), extracted]);
    mkdirSync(join(dir, 'elsewhere'));
    execFileSync('tar', ['-xzf', join(dir, 'pkg', TARBALL), '-C', join(dir, 'elsewhere')]);
    unpacked = join(dir, 'elsewhere', `portolan-${VERSION}-linux-x64`);
    mask = join(dir, 'no-node');
    writeFileSync(mask, '');
  },
  { timeout: 600_000 },
);

after(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const b of backends) await b.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * `command args` in a new mount namespace where the machine's Node.js binary is an empty file, with
 * only `env` (and a PATH without anything of this checkout).
 */
function withoutNode(
  command: string,
  args: readonly string[],
  env: Record<string, string> = {},
): ChildProcess {
  const script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"';
  const child = spawn(
    'unshare',
    ['--mount', '--', 'sh', '-c', script, 'sh', mask, realpathSync(process.execPath), command, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', ...env } },
  );
  killOnExit(child);
  children.push(child);
  return child;
}

/** Runs to the end (within a deadline): exit code and output. */
async function runWithoutNode(
  command: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = withoutNode(command, args, env);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** A long-running command's JSON log lines, until one with `msg`, within a deadline. */
async function serving(child: ChildProcess, msg: string): Promise<Record<string, unknown>> {
  const logs: string[] = [];
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`no "${msg}" within 60 s: ${logs.join('\n')}`)), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code}) before "${msg}": ${logs.join('\n')}`));
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        logs.push(line);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (entry.msg === msg) {
            clearTimeout(timer);
            resolve(entry);
          }
        } catch {
          // not JSON: kept in logs for the failure message
        }
      }
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const done = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
  if (!done) child.kill('SIGKILL');
  await exited;
}

/** An EnvironmentFile's NAME=value lines (the unquoted form `vm bundle` writes for plain values). */
function envFile(path: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m?.[1]) vars[m[1]] = m[2] ?? '';
  }
  return vars;
}

test('the .deb: its control fields, files, conffiles and maintainer scripts', () => {
  const deb = join(dir, 'pkg', DEB);
  const field = (name: string): string =>
    execFileSync('dpkg-deb', ['-f', deb, name], { encoding: 'utf8' }).trim();
  assert.equal(field('Package'), 'portolan');
  assert.equal(field('Version'), `${VERSION}-1`);
  assert.equal(field('Architecture'), 'amd64');
  const info = execFileSync('dpkg-deb', ['-I', deb], { encoding: 'utf8' });
  for (const script of ['postinst', 'prerm', 'postrm', 'conffiles', 'control'])
    assert.match(info, new RegExp(`\\b${script}\\b`));

  const listing = execFileSync('dpkg-deb', ['-c', deb], { encoding: 'utf8', maxBuffer: 1 << 26 }).split('\n');
  const entry = (path: string): string | undefined =>
    listing.find((l) => l.endsWith(` ./${path}`) || l.includes(` ./${path} -> `));
  assert.match(
    entry('usr/bin/portolan') ?? '',
    /^lrwxrwxrwx root\/root .* -> \.\.\/lib\/portolan\/bin\/portolan$/,
  );
  for (const path of [
    'usr/lib/portolan/bin/portolan',
    'usr/lib/portolan/runtime/node',
    'usr/lib/portolan/app/dist/cli/main.js',
    'usr/lib/portolan/app/ca/certificate-service.proto',
    'usr/lib/portolan/app/dist/ui/index.html',
    'usr/lib/portolan/app/node_modules/better-sqlite3/build/Release/better_sqlite3.node',
    'usr/lib/portolan/app/node_modules/fs-ext/build/Release/fs_ext.node',
    'lib/systemd/system/portolan.service',
    'lib/systemd/system/portolan-agent.service',
    'etc/portolan/agent.env.example',
    'usr/share/doc/portolan/install.md',
  ])
    assert.match(entry(path) ?? `${path} missing`, /^-rw[-x]r-[-x]r-[-x] root\/root /, path);
  // Read by systemd as root; it may hold a --store URL with its password.
  assert.match(entry('etc/portolan/serve.env') ?? '', /^-rw-r----- root\/root /);
  assert.equal(entry('etc/portolan/agent.env'), undefined, 'agent.env comes from the bundle');
  assert.ok(
    listing.every((l) => l === '' || / root\/root /.test(l)),
    'every file root-owned',
  );
  assert.ok(!listing.some((l) => /\.map$|\/dist\/test\//.test(l)), 'no source maps, no tests');

  const control = join(dir, 'control');
  execFileSync('dpkg-deb', ['-e', deb, control]);
  assert.deepEqual(readFileSync(join(control, 'conffiles'), 'utf8').trim().split('\n'), [
    '/etc/portolan/serve.env',
    '/etc/portolan/agent.env.example',
  ]);
  const postinst = readFileSync(join(control, 'postinst'), 'utf8');
  assert.match(postinst, /useradd --system .*portolan/);
  assert.match(
    readFileSync(join(control, 'postrm'), 'utf8'),
    /"\$1" = purge \][^]*rm -rf \/var\/lib\/portolan /,
  );
  for (const script of ['postinst', 'prerm', 'postrm']) {
    assert.equal(statSync(join(control, script)).mode & 0o777, 0o755, script);
    execFileSync('sh', ['-n', join(control, script)]); // parses
  }
  const launcher = readFileSync(join(extracted, 'usr/lib/portolan/bin/portolan'), 'utf8');
  assert.ok(
    launcher.includes(`/runtime/node" ${NODE_FLAGS.join(' ')} "$root/app/dist/cli/main.js"`),
    launcher,
  );
});

test('the units: what runs, as whom, with which directories, and systemd-analyze verify passes', async () => {
  const unit = (name: string): string => readFileSync(join(extracted, 'lib/systemd/system', name), 'utf8');
  const serve = unit('portolan.service');
  const agent = unit('portolan-agent.service');
  assert.match(serve, /^ExecStart=\/usr\/bin\/portolan serve$/m);
  assert.match(serve, /^EnvironmentFile=-\/etc\/portolan\/serve\.env$/m);
  assert.match(agent, /^ExecStart=\/usr\/bin\/portolan agent$/m);
  assert.match(agent, /^EnvironmentFile=-\/etc\/portolan\/agent\.env$/m);
  assert.match(agent, /^RuntimeDirectoryMode=0750$/m);
  for (const text of [serve, agent]) {
    for (const line of [
      'User=portolan',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ProtectHome=yes',
      'PrivateTmp=yes',
    ])
      assert.match(text, new RegExp(`^${line}$`, 'm'));
    assert.match(text, /^StateDirectory=portolan(-agent)?$/m);
  }
  // The units name /usr/bin/portolan: an overlay on /usr/bin in a mount namespace puts the
  // extracted one there for systemd-analyze, and nothing on this machine changes.
  mkdirSync(join(dir, 'overlay', 'upper'), { recursive: true });
  mkdirSync(join(dir, 'overlay', 'work'), { recursive: true });
  const script =
    'mount -t overlay overlay -o "lowerdir=/usr/bin,upperdir=$1/upper,workdir=$1/work" /usr/bin && ' +
    'ln -s "$2/usr/lib/portolan/bin/portolan" /usr/bin/portolan && ' +
    'systemd-analyze verify "$2/lib/systemd/system/portolan.service" "$2/lib/systemd/system/portolan-agent.service"';
  const r = await run(
    'unshare',
    ['--mount', '--', 'sh', '-c', script, 'sh', join(dir, 'overlay'), extracted],
    {
      timeout: 60_000,
    },
  ).catch((err: { stderr?: string; code?: number }) => ({
    stdout: '',
    stderr: `${err.code}: ${err.stderr}`,
  }));
  assert.equal(r.stderr, '', 'systemd-analyze verify reports nothing');
});

test('the tarball runs from wherever it is unpacked, with no Node.js on the machine', async () => {
  const check = await runWithoutNode('sh', ['-c', 'node --version']);
  assert.notEqual(check.code, 0, 'node is masked in the namespace');
  const r = await runWithoutNode(join(unpacked, 'bin', 'portolan'), ['version']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `portolan ${VERSION} (Node.js ${process.version} at ${join(unpacked, 'runtime', 'node')}, linux-x64)\n`,
  );
});

test('from the extracted .deb, without Node.js: serve, vm bundle beside it, and an agent from agent.env alone that a grpc-js-xds client calls through', async () => {
  const portolan = join(extracted, 'usr', 'bin', 'portolan');
  const version = await runWithoutNode(portolan, ['version']);
  assert.equal(
    version.stdout,
    `portolan ${VERSION} (Node.js ${process.version} at ${join(extracted, 'usr/lib/portolan/runtime/node')}, linux-x64)\n`,
  );

  const backend = await startEchoBackend('packaged', '127.0.0.9', 0);
  backends.push(backend);
  mkdirSync(join(dir, 'config'));
  writeFileSync(
    join(dir, 'config', 'echo.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: shop }
spec:
  hosts: [echo.shop.internal]
  ports: [{ number: ${backend.port}, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.9 }]
`,
  );
  const data = join(dir, 'data');
  // serve from its environment, as portolan.service runs it with serve.env.
  const serve = withoutNode(portolan, ['serve'], {
    PORTOLAN_REGISTRIES: 'config',
    PORTOLAN_CONFIG_DIR: join(dir, 'config'),
    PORTOLAN_DATA_DIR: data,
    PORTOLAN_XDS_ADDR: '127.0.0.1:0',
    PORTOLAN_HTTP_ADDR: '127.0.0.1:0',
    PORTOLAN_SECURE_XDS_ADDR: '127.0.0.1:0',
    PORTOLAN_LOG_FORMAT: 'json',
  });
  try {
    const up = await serving(serve, 'portolan serving');
    const caAddr = String(up.secureXdsAddress);

    const bundle = join(dir, 'bundle');
    const made = await runWithoutNode(portolan, [
      'vm',
      'bundle',
      '--namespace',
      'shop',
      '--service-account',
      'cart',
      '--ca-addr',
      caAddr,
      '--uses',
      '2',
      '--data-dir',
      data,
      '--out',
      bundle,
      '--install-dir',
      bundle,
    ]);
    assert.equal(made.code, 0, made.stderr);
    assert.match(made.stdout, /agent\.env[^]*root-cert\.pem[^]*systemctl enable --now portolan-agent/);
    assert.equal(statSync(join(bundle, 'agent.env')).mode & 0o777, 0o600);
    const settings = envFile(join(bundle, 'agent.env'));
    assert.deepEqual(Object.keys(settings).sort(), [
      'PORTOLAN_CA_ADDR',
      'PORTOLAN_JOIN_TOKEN',
      'PORTOLAN_NAMESPACE',
      'PORTOLAN_ROOT_CERT',
      'PORTOLAN_SERVICE_ACCOUNT',
    ]);
    assert.equal(settings.PORTOLAN_CA_ADDR, caAddr);
    assert.equal(settings.PORTOLAN_ROOT_CERT, join(bundle, 'root-cert.pem'));
    const grouped = await runWithoutNode(portolan, [
      'vm',
      'bundle',
      '--namespace',
      'shop',
      '--service-account',
      'cart',
      '--group',
      'cart',
      '--ca-addr',
      caAddr,
      '--data-dir',
      data,
      '--out',
      join(dir, 'grouped'),
    ]);
    assert.equal(grouped.code, 0, grouped.stderr);
    assert.equal(envFile(join(dir, 'grouped', 'agent.env')).PORTOLAN_GROUP, 'cart');

    const vm = join(dir, 'vm');
    const agent = withoutNode(portolan, ['agent'], {
      ...settings,
      PORTOLAN_LISTEN_XDS: '127.0.0.1:0',
      PORTOLAN_STATUS_ADDR: '127.0.0.1:0',
      PORTOLAN_DNS_ADDR: '127.0.0.1:0',
      PORTOLAN_CERT_DIR: join(vm, 'certs'),
      PORTOLAN_DATA_DIR: join(vm, 'data'),
      PORTOLAN_RUN_DIR: join(vm, 'run'),
      PORTOLAN_GRPC_BOOTSTRAP: join(vm, 'grpc-bootstrap.json'),
    });
    try {
      const agentUp = await serving(agent, 'portolan agent serving');
      assert.equal(agentUp.identity, 'spiffe://cluster.local/ns/shop/sa/cart');
      const Client = echoClientClass();
      const client = new Client(
        `xds:///echo.shop.internal:${backend.port}`,
        grpc.credentials.createInsecure(),
        {
          [BOOTSTRAP_OPTION]: readFileSync(join(vm, 'grpc-bootstrap.json'), 'utf8'),
        },
      );
      try {
        await eventually(async () => assert.equal(await callEcho(client), 'packaged'), { timeoutMs: 20_000 });
      } finally {
        client.close();
      }
    } finally {
      await stop(agent);
    }
  } finally {
    await stop(serve);
  }
});
