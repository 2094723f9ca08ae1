// `portolan serve` option compilation: defaults, registries, addresses, durations, log level.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  compileServeOptions,
  OptionError,
  SERVE_DEFAULTS,
  type RawServeOptions,
} from '../../../cli/options.js';

function compile(overrides: Partial<RawServeOptions>): ReturnType<typeof compileServeOptions> {
  return compileServeOptions({ ...SERVE_DEFAULTS, ...overrides });
}

function rejects(overrides: Partial<RawServeOptions>, message: RegExp): void {
  assert.throws(
    () => compile(overrides),
    (err: unknown) => {
      assert.ok(err instanceof OptionError, `an OptionError, got ${String(err)}`);
      assert.match(err.message, message);
      return true;
    },
  );
}

test('the defaults compile to the documented values', () => {
  assert.deepEqual(compileServeOptions(SERVE_DEFAULTS), {
    registries: ['config'],
    configDir: '/etc/portolan/config.d',
    dataDir: '/var/lib/portolan',
    xdsAddr: { host: '127.0.0.1', port: 15010 },
    httpAddr: { host: '127.0.0.1', port: 15014 },
    logLevel: 'info',
    pushWindowMs: 100,
    pushMaxDelayMs: 10_000,
    pushConcurrency: 100,
    pushNewStreamsPerSecond: 1000,
    pushAdmissionMaxDelayMs: 50,
    serveStale: true,
    resetStore: false,
    historyLimit: 10000,
    autoRegistrationGraceMs: 10_000,
    pathNormalization: 'MERGE_SLASHES',
    flags: SERVE_DEFAULTS,
  });
});

test('--push-admission-max-delay takes a duration; 0 turns the adaptive admission off', () => {
  assert.equal(compile({ pushAdmissionMaxDelay: '0' }).pushAdmissionMaxDelayMs, 0);
  assert.equal(compile({ pushAdmissionMaxDelay: '20ms' }).pushAdmissionMaxDelayMs, 20);
  rejects({ pushAdmissionMaxDelay: 'fast' }, /--push-admission-max-delay: expected a duration/);
});

test('--auto-registration-grace takes a duration', () => {
  assert.equal(compile({ autoRegistrationGrace: '2.5s' }).autoRegistrationGraceMs, 2500);
  rejects({ autoRegistrationGrace: 'soon' }, /--auto-registration-grace: expected a duration/);
});

const registryCases: { registries: string; expect: string[] }[] = [
  { registries: 'mock', expect: ['mock'] },
  { registries: 'config,mock', expect: ['config', 'mock'] },
  { registries: 'mock,config', expect: ['mock', 'config'] },
  { registries: ' Mock , CONFIG ', expect: ['mock', 'config'] },
  { registries: 'mock,', expect: ['mock'] },
];
for (const c of registryCases) {
  test(`--registries ${JSON.stringify(c.registries)} keeps names in order`, () => {
    assert.deepEqual(compile({ registries: c.registries }).registries, c.expect);
  });
}

test('an unknown registry is an error naming it and the known ones', () => {
  rejects(
    { registries: 'config,consulx' },
    /unknown registry "consulx" \(known: config, mock, consul, zookeeper, kubernetes\)/,
  );
});

test('a registry named twice is an error', () => {
  rejects({ registries: 'mock,config,MOCK' }, /--registries: a registry is named twice/);
});

test('an empty registry list is an error', () => {
  rejects({ registries: ' , ' }, /--registries: name at least one registry/);
});

const goodAddresses: { text: string; host: string; port: number }[] = [
  { text: '0.0.0.0:15010', host: '0.0.0.0', port: 15010 },
  { text: 'localhost:0', host: 'localhost', port: 0 },
  { text: '[::1]:0', host: '::1', port: 0 },
  { text: '[::]:65535', host: '::', port: 65535 },
];
for (const c of goodAddresses) {
  test(`address ${c.text} parses to ${c.host} port ${c.port}`, () => {
    const o = compile({ xdsAddr: c.text, httpAddr: c.text });
    assert.deepEqual(o.xdsAddr, { host: c.host, port: c.port });
    assert.deepEqual(o.httpAddr, { host: c.host, port: c.port });
  });
}

const badAddresses = [
  '127.0.0.1',
  '127.0.0.1:',
  ':15010',
  '127.0.0.1:65536',
  '127.0.0.1:123456',
  '::1:80',
  '[::1]',
  'host:port',
  '127.0.0.1:-1',
  '',
];
for (const text of badAddresses) {
  test(`bad address ${JSON.stringify(text)} is an error naming the flag`, () => {
    rejects({ xdsAddr: text }, /^--xds-addr: expected HOST:PORT/);
    rejects({ httpAddr: text }, /^--http-addr: expected HOST:PORT/);
  });
}

const durations: { text: string; ms: number }[] = [
  { text: '0', ms: 0 },
  { text: '250', ms: 250 },
  { text: '250ms', ms: 250 },
  { text: '1s', ms: 1000 },
  { text: '1.5s', ms: 1500 },
  { text: '2m', ms: 120_000 },
  { text: ' 10ms ', ms: 10 },
];
for (const c of durations) {
  test(`--push-window ${JSON.stringify(c.text)} is ${c.ms} ms`, () => {
    assert.equal(compile({ pushWindow: c.text }).pushWindowMs, c.ms);
  });
}

for (const text of ['', 'fast', '-1s', '1h', '1 s', 's', '1.s']) {
  test(`--push-window ${JSON.stringify(text)} is an error`, () => {
    rejects({ pushWindow: text }, /^--push-window: expected a duration/);
  });
}

test('an unknown log level is an error; known ones pass through', () => {
  rejects({ logLevel: 'verbose' }, /^--log-level:/);
  assert.equal(compile({ logLevel: 'silent' }).logLevel, 'silent');
  assert.equal(compile({ logLevel: 'debug' }).logLevel, 'debug');
});
