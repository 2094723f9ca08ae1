// `portolan agent --workload …` (issue #49): each workload's paths, node id, token file and group;
// PORTOLAN_WORKLOAD as its environment form; the two forms refused together, as are --listen-xds,
// duplicate names and groups, a token for another identity, an unknown user; the bootstrap of the
// workload a bare `--workload NAME` selects, one per workload written; the modules per workload.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Command } from 'commander';
import { addAgentCommand, compileAgentSettings, renderBootstrap } from '../../../cli/agent.js';
import { bootstrapPath, printedWorkload } from '../../../cli/agent-bootstrap.js';
import { workloadModules } from '../../../cli/agent-modules.js';
import { addEnvOptions } from '../../../cli/env-options.js';
import { OptionError } from '../../../cli/options.js';

type Flags = Parameters<typeof compileAgentSettings>[0];
let dir: string;

const tokenFor = (sa: string, td = 'cluster.local'): string =>
  `abc.secret.${Buffer.from(`spiffe://${td}/ns/shop/sa/${sa}`).toString('base64url')}`;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-workloads-cli-'));
  writeFileSync(join(dir, 'root.pem'), 'roots');
  writeFileSync(join(dir, 'cart.token'), `${tokenFor('cart')}\n`);
  writeFileSync(join(dir, 'web.token'), `${tokenFor('web')}\n`);
});

after(() => rmSync(dir, { recursive: true, force: true }));

const spec = (name: string, extra = ''): string =>
  `name=${name},service-account=${name},token-file=${join(dir, `${name}.token`)}${extra}`;

/** The flags as commander parses them, with the environment forms (as cli/main.ts sets them up). */
function parsed(args: string[], env: Record<string, string> = {}): Flags {
  const program = new Command();
  let out: Flags | undefined;
  addAgentCommand(program);
  const agent = program.commands.find((c) => c.name() === 'agent');
  assert.ok(agent);
  addEnvOptions(agent, { warn: () => undefined });
  agent.action((_cmd: string[], f: Flags) => {
    out = f;
  });
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    program.parse([
      ...['node', 'portolan', 'agent', '--ca-addr', 'cp:15012', '--root-cert', join(dir, 'root.pem')],
      ...['--namespace', 'shop', '--cert-dir', join(dir, 'certs'), '--data-dir', join(dir, 'data')],
      ...['--run-dir', join(dir, 'run'), ...args],
    ]);
  } finally {
    for (const k of Object.keys(env)) delete process.env[k];
    Object.assign(process.env, saved);
  }
  assert.ok(out);
  return out;
}

const refused = (args: string[], message: RegExp, envToken?: string): void =>
  assert.throws(
    () => compileAgentSettings(parsed(args), envToken),
    (err: unknown) => err instanceof OptionError && message.test(err.message),
  );

test('each workload: its certificate, socket and cache directories, node id NAME.HOSTNAME, its token (newline ignored), its group', () => {
  const s = compileAgentSettings(
    parsed(['--workload', spec('cart', ',group=cart-vms'), '--workload', spec('web')]),
    undefined,
  );
  assert.deepEqual(
    s.workloads.map((w) => [
      w.name,
      w.spiffeId,
      w.nodeId,
      w.token,
      w.certDir,
      w.cacheDir,
      w.xdsSocket,
      w.sdsSocket,
      w.group,
    ]),
    [
      [
        'cart',
        'spiffe://cluster.local/ns/shop/sa/cart',
        `cart.${hostname()}`,
        tokenFor('cart'),
        join(dir, 'certs', 'cart'),
        join(dir, 'data', 'cart', 'xds-cache'),
        join(dir, 'run', 'cart', 'xds.sock'),
        join(dir, 'run', 'cart', 'sds.sock'),
        'cart-vms',
      ],
      [
        'web',
        'spiffe://cluster.local/ns/shop/sa/web',
        `web.${hostname()}`,
        tokenFor('web'),
        join(dir, 'certs', 'web'),
        join(dir, 'data', 'web', 'xds-cache'),
        join(dir, 'run', 'web', 'xds.sock'),
        join(dir, 'run', 'web', 'sds.sock'),
        undefined,
      ],
    ],
  );
  assert.equal(s.listenXds, undefined, 'local xDS on the sockets only');
});

test('PORTOLAN_WORKLOAD is the environment form: several, separated by ";"', () => {
  const s = compileAgentSettings(
    parsed([], { PORTOLAN_WORKLOAD: `${spec('cart')}; ${spec('web')}` }),
    undefined,
  );
  assert.deepEqual(
    s.workloads.map((w) => w.name),
    ['cart', 'web'],
  );
});

test('the two forms do not mix; --listen-xds is refused with workloads (off is fine)', () => {
  refused(
    ['--service-account', 'cart', '--workload', spec('web')],
    /^--workload and --service-account do not mix/,
  );
  refused(['--group', 'g', '--workload', spec('web')], /^--workload and --group do not mix/);
  refused(
    ['--workload', spec('web')],
    /^--workload and --token \(or PORTOLAN_JOIN_TOKEN\) do not mix/,
    tokenFor('web'),
  );
  refused(['--workload', spec('web'), '--listen-xds', '127.0.0.1:0'], /^--listen-xds: with --workload/);
  assert.equal(
    compileAgentSettings(parsed(['--workload', spec('web'), '--listen-xds', 'off']), undefined).workloads
      .length,
    1,
  );
  refused([], /required option '--service-account <sa>' not specified/);
});

test('bad workload values: a clear error each', () => {
  refused(['--workload', spec('cart'), '--workload', spec('cart')], /name=cart is also cart's/);
  refused(
    ['--workload', spec('cart', ',group=g'), '--workload', spec('web', ',group=g')],
    /--workload web: group=g is also cart's; each workload needs its own/,
  );
  refused(
    ['--workload', 'name=cart,service-account=cart'],
    /name, service-account and token-file are required/,
  );
  refused(['--workload', `${spec('cart')},colour=blue`], /"colour=blue" is not one of name=NAME/);
  refused(['--workload', spec('Cart_1')], /the name must be a DNS label/);
  refused(['--workload', spec('cart', ',user=no-such-user-here')], /user=no-such-user-here: no such user/);
  refused(
    ['--workload', `name=cart,service-account=cart,token-file=${join(dir, 'web.token')}`],
    /--workload cart: its join token is for spiffe:\/\/cluster.local\/ns\/shop\/sa\/web/,
  );
  refused(
    ['--workload', `name=cart,service-account=cart,token-file=${join(dir, 'missing.token')}`],
    /--workload cart: token-file: ENOENT/,
  );
  refused(['--workload', 'cart'], /a bare name selects one of the workloads given/);
});

test('user=: resolved to its uid and primary gid', () => {
  const s = compileAgentSettings(parsed(['--workload', spec('cart', ',user=root')]), undefined);
  assert.deepEqual(s.workloads[0]?.owner, { user: 'root', uid: 0, gid: 0 });
});

test('bootstraps per workload: a bare --workload NAME selects; each points at its own socket; Envoy admin ports apart', () => {
  const two = ['--workload', spec('cart'), '--workload', spec('web')];
  const all = compileAgentSettings(parsed(two), undefined);
  assert.throws(
    () => printedWorkload(all),
    /2 workloads; select one with a bare --workload NAME \(cart, web\)/,
  );
  const s = compileAgentSettings(parsed([...two, '--workload', 'web']), undefined);
  const web = printedWorkload(s);
  assert.equal(web.name, 'web');
  const grpc = JSON.parse(renderBootstrap('grpc', s, web)) as {
    node: { id: string; metadata: Record<string, string> };
    xds_servers: { server_uri: string }[];
  };
  assert.equal(grpc.xds_servers[0]?.server_uri, `unix:${join(dir, 'run', 'web', 'xds.sock')}`);
  assert.equal(grpc.node.id, `web.${hostname()}`);
  assert.equal(grpc.node.metadata.SERVICE_ACCOUNT, 'web');
  const admin = (w: number): unknown =>
    (JSON.parse(renderBootstrap('envoy', s, s.workloads[w])) as { admin: { address: unknown } }).admin
      .address;
  assert.notDeepEqual(admin(0), admin(1));
  assert.equal(bootstrapPath('/run/portolan/grpc.json', web), '/run/portolan/web/grpc.json');
  refused([...two, '--workload', 'shop'], /--workload shop: no such workload \(given: cart, web\)/);
});

test('modules per workload: each its own control stream and registration; the DNS proxy on the first', () => {
  const s = compileAgentSettings(
    parsed(['--workload', spec('cart', ',group=cart-vms'), '--workload', spec('web', ',group=web-vms')]),
    undefined,
  );
  const m = workloadModules(s);
  assert.deepEqual(
    m.perWorkload.map((list) => list.map((x) => x.name)),
    [
      ['control stream', 'workload registration'],
      ['control stream', 'workload registration'],
    ],
  );
  assert.deepEqual(
    m.agentWide.map((x) => x.name),
    ['DNS proxy'],
  );
  const none = workloadModules(
    compileAgentSettings(parsed(['--workload', spec('cart'), '--no-dns']), undefined),
  );
  assert.deepEqual(none.perWorkload, [[]]);
});
