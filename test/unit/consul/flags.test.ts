// The --consul-* flags: defaults, the token from the environment, TLS files, and clear errors.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { addConsulFlags, parseConsulFlags } from '../../../adapters/consul/flags.js';
import { OptionError } from '../../../cli/options.js';

/** Parses argv the way `portolan serve` does and returns commander's flags. */
function flagsOf(argv: string[]): Record<string, unknown> {
  const command = new Command().exitOverride();
  addConsulFlags(command);
  command.parse(argv, { from: 'user' });
  return command.opts();
}

test('defaults: local agent over http, service.consul, warning is healthy, 60 s wait, no token', () => {
  const s = parseConsulFlags(flagsOf([]), {});
  assert.equal(s.url.href, 'http://127.0.0.1:8500/');
  assert.equal(s.domain, 'service.consul');
  assert.equal(s.warningHealthy, true);
  assert.equal(s.waitMs, 60_000);
  assert.equal(s.token, undefined);
  assert.equal(s.datacenter, undefined);
  assert.equal(s.tls, undefined);
});

test('the token comes from --consul-token, else CONSUL_HTTP_TOKEN', () => {
  assert.equal(parseConsulFlags(flagsOf([]), { CONSUL_HTTP_TOKEN: 'from-env' }).token, 'from-env');
  assert.equal(
    parseConsulFlags(flagsOf(['--consul-token', 'from-flag']), { CONSUL_HTTP_TOKEN: 'from-env' }).token,
    'from-flag',
  );
});

test('every flag is read', () => {
  const s = parseConsulFlags(
    flagsOf([
      '--consul-addr',
      'http://10.1.2.3:18500',
      '--consul-datacenter',
      'eu-west',
      '--consul-domain',
      'Consul.Example.',
      '--consul-warning-healthy',
      'false',
      '--consul-wait',
      '5m',
    ]),
    {},
  );
  assert.equal(s.url.host, '10.1.2.3:18500');
  assert.equal(s.datacenter, 'eu-west');
  assert.equal(s.domain, 'consul.example');
  assert.equal(s.warningHealthy, false);
  assert.equal(s.waitMs, 300_000);
  assert.equal(parseConsulFlags(flagsOf(['--consul-warning-healthy']), {}).warningHealthy, true);
  assert.equal(
    parseConsulFlags(flagsOf(['--consul-addr', '10.0.0.9:8500']), {}).url.href,
    'http://10.0.0.9:8500/',
  );
});

test('TLS files are read for an https address', () => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-consul-tls-'));
  for (const f of ['ca.pem', 'cert.pem', 'key.pem']) writeFileSync(join(dir, f), `-----${f}-----`);
  const s = parseConsulFlags(
    flagsOf([
      '--consul-addr',
      'https://consul.internal:8501',
      '--consul-ca-file',
      join(dir, 'ca.pem'),
      '--consul-cert-file',
      join(dir, 'cert.pem'),
      '--consul-key-file',
      join(dir, 'key.pem'),
    ]),
    {},
  );
  assert.equal(s.tls?.ca?.toString(), '-----ca.pem-----');
  assert.equal(s.tls?.cert?.toString(), '-----cert.pem-----');
  assert.equal(s.tls?.key?.toString(), '-----key.pem-----');
});

test('bad values are OptionErrors naming the flag', () => {
  const bad: [string[], RegExp][] = [
    [['--consul-addr', 'ftp://127.0.0.1:8500'], /--consul-addr: use http:\/\/ or https:\/\//],
    [['--consul-addr', 'not a url'], /--consul-addr: expected a URL/],
    [['--consul-addr', 'http://c:8500/v1'], /--consul-addr: give only scheme, host and port/],
    [['--consul-ca-file', '/x.pem'], /need an https:\/\/ --consul-addr/],
    [['--consul-addr', 'https://c:8501', '--consul-cert-file', '/x.pem'], /go together/],
    [
      ['--consul-addr', 'https://c:8501', '--consul-ca-file', '/nonexistent/ca.pem'],
      /--consul-ca-file: cannot read/,
    ],
    [['--consul-domain', 'bad_domain!'], /--consul-domain/],
    [['--consul-warning-healthy', 'maybe'], /--consul-warning-healthy: expected true or false/],
    [['--consul-wait', '11m'], /--consul-wait: between/],
    [['--consul-wait', 'soon'], /--consul-wait/],
    [['--consul-datacenter', 'dc 1'], /--consul-datacenter/],
  ];
  for (const [argv, message] of bad) {
    assert.throws(
      () => parseConsulFlags(flagsOf(argv), {}),
      (err: unknown) => {
        assert.ok(err instanceof OptionError, `${argv.join(' ')}: ${String(err)}`);
        assert.match(err.message, message);
        return true;
      },
    );
  }
});
