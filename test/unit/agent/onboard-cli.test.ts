// `portolan agent` flags of onboarding: --group, --instance-ip, the DNS proxy's --dns-addr,
// --no-dns and --dns-upstream, and what they change in the Envoy bootstrap.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Command } from 'commander';
import { parseUpstreams, resolvConfServers } from '../../../agent/dns/upstreams.js';
import { addAgentCommand, agentModules, compileAgentSettings, renderBootstrap } from '../../../cli/agent.js';
import { OptionError } from '../../../cli/options.js';

let dir: string;
let flags: Parameters<typeof compileAgentSettings>[0];

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-onboard-cli-'));
  writeFileSync(join(dir, 'root.pem'), 'roots');
  flags = {
    caAddr: 'cp.example:15012',
    rootCert: join(dir, 'root.pem'),
    namespace: 'shop',
    serviceAccount: 'echo',
    certDir: join(dir, 'certs'),
    dataDir: join(dir, 'data'),
    runDir: join(dir, 'run'),
    listenXds: '127.0.0.1:15020',
    statusAddr: '127.0.0.1:15021',
    adminAddr: '127.0.0.1:15000',
    maxLocalStreams: '1024',
    cacheMaxNodes: '64',
    cacheMaxBytes: '64MiB',
    cacheFallback: '3s',
    drainTimeout: '20s',
    logLevel: 'info',
  };
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** The flags as commander parses them from a command line (defaults included). */
function parsed(args: string[]): Parameters<typeof compileAgentSettings>[0] {
  const program = new Command();
  let out: Parameters<typeof compileAgentSettings>[0] | undefined;
  addAgentCommand(program);
  const agent = program.commands.find((c) => c.name() === 'agent');
  assert.ok(agent);
  agent.action((_cmd: string[], f: Parameters<typeof compileAgentSettings>[0]) => {
    out = f;
  });
  program.parse([
    'node',
    'portolan',
    'agent',
    '--ca-addr',
    'cp:15012',
    '--root-cert',
    flags.rootCert,
    '--namespace',
    'shop',
    '--service-account',
    'echo',
    ...args,
  ]);
  assert.ok(out);
  return out;
}

test('defaults: the DNS proxy on 127.0.0.1:15053 with the system resolvers; no group', () => {
  const s = compileAgentSettings(parsed([]), undefined);
  assert.deepEqual(s.dns, { addr: { host: '127.0.0.1', port: 15053 } });
  assert.equal(s.group, undefined);
  const modules = agentModules(s);
  assert.deepEqual(
    modules.all.map((m) => m.name),
    ['control stream', 'DNS proxy'],
  );
});

test('--group, --instance-ip, --dns-upstream; --no-dns turns the proxy off', () => {
  const s = compileAgentSettings(
    parsed(['--group', 'echo-vms', '--instance-ip', '10.0.0.7', '--dns-upstream', '10.0.0.2,[fd00::2]:5353']),
    undefined,
  );
  assert.equal(s.group, 'echo-vms');
  assert.equal(s.instanceIp, '10.0.0.7');
  assert.deepEqual(s.dns?.upstreams, [
    { host: '10.0.0.2', port: 53 },
    { host: 'fd00::2', port: 5353 },
  ]);
  assert.deepEqual(
    agentModules(s).all.map((m) => m.name),
    ['control stream', 'workload registration', 'DNS proxy'],
  );
  const off = compileAgentSettings(parsed(['--no-dns']), undefined);
  assert.equal(off.dns, undefined);
  assert.deepEqual(agentModules(off).all, [], 'no group, no DNS: no stream of its own');
});

test('bad values are refused with the flag named', () => {
  const refuses = (extra: Partial<typeof flags>, message: RegExp): void =>
    assert.throws(
      () => compileAgentSettings({ ...flags, ...extra }, undefined),
      (err: unknown) => err instanceof OptionError && message.test(err.message),
    );
  refuses({ group: 'Echo VMs' }, /--group: "Echo VMs" is not a WorkloadGroup name/);
  refuses({ instanceIp: 'vm-1' }, /--instance-ip: "vm-1" is not an IP address/);
  refuses(
    { dns: true, dnsUpstream: 'resolver.example' },
    /--dns-upstream: "resolver.example" is not IP\[:PORT\]/,
  );
  refuses({ dns: true, dnsAddr: '15053' }, /--dns-addr: expected HOST:PORT/);
});

test('the Envoy bootstrap asks for auto-allocated addresses only with the DNS proxy on', () => {
  const meta = (s: ReturnType<typeof compileAgentSettings>): Record<string, unknown> =>
    (JSON.parse(renderBootstrap('envoy', s)) as { node: { metadata: Record<string, unknown> } }).node
      .metadata;
  assert.equal(meta(compileAgentSettings(parsed([]), undefined)).DNS_AUTO_ALLOCATE, 'true');
  assert.equal(meta(compileAgentSettings(parsed(['--no-dns']), undefined)).DNS_AUTO_ALLOCATE, undefined);
});

test('upstreams: resolv.conf nameservers (IPv4, IPv6 without zone), and the flag syntax', () => {
  assert.deepEqual(
    resolvConfServers(
      '# c\nsearch shop.svc\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nnameserver bogus\n',
    ),
    [
      { host: '10.0.0.2', port: 53 },
      { host: 'fe80::1', port: 53 },
    ],
  );
  assert.deepEqual(parseUpstreams('127.0.0.1:5300, ::1'), [
    { host: '127.0.0.1', port: 5300 },
    { host: '::1', port: 53 },
  ]);
  assert.throws(() => parseUpstreams('10.0.0.1:99999'), /not IP\[:PORT\]/);
});
