// Every serve and agent flag is also a PORTOLAN_* variable (cli/env-options.ts, issue #48): checked
// on commander commands built like the real ones, then on the real `portolan` processes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { addEnvOptions, envVariableName } from '../../../cli/env-options.js';

const MAIN = fileURLToPath(new URL('../../../cli/main.js', import.meta.url));

/** Runs `fn` with these PORTOLAN_ variables set (and no others), then puts process.env back. */
function withEnv<T>(vars: Record<string, string>, fn: () => T): T {
  const saved = { ...process.env };
  for (const name of Object.keys(process.env)) if (name.startsWith('PORTOLAN_')) delete process.env[name];
  Object.assign(process.env, vars);
  try {
    return fn();
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
    Object.assign(process.env, saved);
  }
}

interface Parsed {
  opts: Record<string, unknown>;
  warnings: string[];
  error?: string;
}

/** A program with an `agent`-like subcommand, parsed from `argv` under `vars`. */
function parse(argv: string[], vars: Record<string, string>): Parsed {
  const program = new Command().name('portolan').exitOverride();
  const errors: string[] = [];
  program.configureOutput({ writeErr: (s) => errors.push(s), writeOut: () => undefined });
  let opts: Record<string, unknown> = {};
  const agent = program
    .command('agent')
    .requiredOption('--ca-addr <host:port>', 'the CA')
    .option('--token <token>', 'join token')
    .option('--listen-xds <host:port>', 'local xDS', '127.0.0.1:15020')
    .addOption(new Option('--log-level <level>', 'log level').choices(['info', 'debug']).default('info'))
    .option('--no-dns', 'no DNS proxy')
    .option('--reset-store', 'start anew')
    .action((o: Record<string, unknown>) => {
      opts = o;
    });
  const warnings: string[] = [];
  addEnvOptions(agent, { aliases: { '--token': 'PORTOLAN_JOIN_TOKEN' }, warn: (l) => warnings.push(l) });
  withEnv(vars, () => {
    try {
      program.parse(['agent', ...argv], { from: 'user' });
    } catch {
      // exitOverride: the message is in `errors`
    }
  });
  return { opts, warnings, ...(errors.length > 0 && { error: errors.join('') }) };
}

test('the variable of a flag is PORTOLAN_ and the flag in upper snake case', () => {
  assert.equal(envVariableName('--ca-addr'), 'PORTOLAN_CA_ADDR');
  assert.equal(envVariableName('--push-new-streams-per-second'), 'PORTOLAN_PUSH_NEW_STREAMS_PER_SECOND');
  assert.equal(envVariableName('--no-dns'), 'PORTOLAN_NO_DNS');
});

test('a required flag may come from the environment, and the command line wins', () => {
  const fromEnv = parse([], { PORTOLAN_CA_ADDR: 'ca.example:15012', PORTOLAN_LISTEN_XDS: '127.0.0.1:9' });
  assert.equal(fromEnv.error, undefined);
  assert.equal(fromEnv.opts.caAddr, 'ca.example:15012');
  assert.equal(fromEnv.opts.listenXds, '127.0.0.1:9');
  const cli = parse(['--ca-addr', 'cli:1'], { PORTOLAN_CA_ADDR: 'env:1' });
  assert.equal(cli.opts.caAddr, 'cli:1');
  assert.equal(cli.opts.listenXds, '127.0.0.1:15020', 'the default when neither gives it');
  assert.match(parse([], {}).error ?? '', /required option '--ca-addr <host:port>' not specified/);
});

test("a value from the environment goes through the flag's checks", () => {
  const bad = parse([], { PORTOLAN_CA_ADDR: 'a:1', PORTOLAN_LOG_LEVEL: 'loud' });
  assert.match(
    bad.error ?? '',
    /'--log-level <level>' value 'loud' from env 'PORTOLAN_LOG_LEVEL' is invalid/,
  );
  assert.equal(parse([], { PORTOLAN_CA_ADDR: 'a:1', PORTOLAN_LOG_LEVEL: 'debug' }).opts.logLevel, 'debug');
});

test('the join token keeps its variable, PORTOLAN_JOIN_TOKEN', () => {
  assert.equal(parse([], { PORTOLAN_CA_ADDR: 'a:1', PORTOLAN_JOIN_TOKEN: 't0k' }).opts.token, 't0k');
});

test('booleans are true or false, strictly; --no-dns is PORTOLAN_NO_DNS=true', () => {
  const base = { PORTOLAN_CA_ADDR: 'a:1' };
  assert.equal(parse([], { ...base, PORTOLAN_RESET_STORE: 'true' }).opts.resetStore, true);
  assert.equal(parse([], { ...base, PORTOLAN_RESET_STORE: 'false' }).opts.resetStore, undefined);
  assert.equal(parse([], { ...base, PORTOLAN_NO_DNS: 'true' }).opts.dns, false);
  assert.equal(parse([], { ...base, PORTOLAN_NO_DNS: 'false' }).opts.dns, true);
  assert.equal(parse(['--no-dns'], { ...base, PORTOLAN_NO_DNS: 'false' }).opts.dns, false, 'the flag wins');
  assert.match(
    parse([], { ...base, PORTOLAN_RESET_STORE: 'yes' }).error ?? '',
    /PORTOLAN_RESET_STORE: expected true or false, got "yes"/,
  );
});

test('an unknown PORTOLAN_ variable is warned about, with the near one, even when a flag is then missing', () => {
  const r = parse([], { PORTOLAN_CA_ADR: 'a:1', PORTOLAN_DNS: 'false', PORTOLAN_CA_KEY_PASSPHRASE: 'x' });
  assert.deepEqual(r.warnings, [
    'warning: PORTOLAN_CA_ADR is not a setting of `portolan agent`; ignored (did you mean PORTOLAN_CA_ADDR?)',
    'warning: PORTOLAN_DNS is not a setting of `portolan agent`; ignored (did you mean PORTOLAN_NO_DNS?)',
  ]);
  assert.match(r.error ?? '', /required option '--ca-addr/);
});

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-env-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `portolan ARGS` with only these PORTOLAN_ variables. */
function portolan(
  args: string[],
  vars: Record<string, string>,
): { status: number | null; stdout: string; stderr: string } {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PORTOLAN_')));
  return spawnSync(process.execPath, [MAIN, ...args], {
    env: { ...env, ...vars },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

test('the real agent takes its whole configuration from the environment', (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'root.pem'), 'not read for --print-bootstrap beyond existing\n');
  const r = portolan(['agent', '--print-bootstrap', 'grpc', '--service-account', 'cli-sa'], {
    PORTOLAN_CA_ADDR: '127.0.0.1:15012',
    PORTOLAN_ROOT_CERT: join(dir, 'root.pem'),
    PORTOLAN_NAMESPACE: 'env-ns',
    PORTOLAN_SERVICE_ACCOUNT: 'env-sa',
    PORTOLAN_CERT_DIR: join(dir, 'certs'),
    PORTOLAN_LISTEN_XDS: '127.0.0.1:17777',
    PORTOLAN_NO_DNS: 'true',
  });
  assert.equal(r.status, 0, r.stderr);
  const bootstrap = JSON.parse(r.stdout) as {
    xds_servers: { server_uri: string }[];
    node: { metadata: Record<string, string> };
  };
  assert.equal(bootstrap.xds_servers[0]?.server_uri, '127.0.0.1:17777');
  assert.equal(bootstrap.node.metadata.NAMESPACE, 'env-ns');
  assert.equal(bootstrap.node.metadata.SERVICE_ACCOUNT, 'cli-sa', 'the command line wins');
  assert.equal(bootstrap.node.metadata.PORTOLAN_CERT_DIR, join(dir, 'certs'));
  assert.equal(bootstrap.node.metadata.DNS_CAPTURE, undefined, 'PORTOLAN_NO_DNS=true is --no-dns');
});

test('the real serve reads its flags from the environment', (t) => {
  const dir = tempDir(t);
  const r = portolan(['serve'], {
    PORTOLAN_REGISTRIES: 'mock',
    PORTOLAN_DATA_DIR: join(dir, 'data'),
    PORTOLAN_SECURE_XDS_ADDR: 'off',
    PORTOLAN_PUSH_WINDOW: 'soon',
    PORTOLAN_PUSH_WINDOWS: '1s',
  });
  assert.equal(r.status, 2);
  assert.equal(
    r.stderr,
    'warning: PORTOLAN_PUSH_WINDOWS is not a setting of `portolan serve`; ignored (did you mean PORTOLAN_PUSH_WINDOW?)\n' +
      'error: --push-window: expected a duration like 100ms or 1s, got "soon"\n(see `portolan serve --help`)\n',
  );
});
