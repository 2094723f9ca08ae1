// `portolan serve` limit flags: their defaults are the servers' defaults, values compile, bad ones
// are refused naming the flag, and without any of them (not from the command line) nothing is set.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileLimitOptions, LIMIT_DEFAULTS } from '../../../cli/limit-options.js';
import { OptionError } from '../../../cli/options.js';
import { DEFAULT_STREAM_LIMITS } from '../../../xds/server/stream-limits.js';
import { DEFAULT_TRANSPORT_LIMITS } from '../../../xds/server/transport-limits.js';

test('the flag defaults compile to the servers’ defaults', () => {
  assert.deepEqual(compileLimitOptions({ ...LIMIT_DEFAULTS }), {
    stream: DEFAULT_STREAM_LIMITS,
    transport: DEFAULT_TRANSPORT_LIMITS,
  });
  assert.equal(LIMIT_DEFAULTS.maxRequestBytes, String(4 * 1024 * 1024));
  assert.equal(LIMIT_DEFAULTS.maxNamesPerType, '10000');
});

test('given values compile; none given is no limits section', () => {
  const limits = compileLimitOptions({
    ...LIMIT_DEFAULTS,
    maxNamesPerType: '500',
    maxStreamsPerPeer: '20000',
    firstRequestTimeout: '5s',
    keepaliveMinPingInterval: '1m',
  });
  assert.equal(limits?.stream.maxNamesPerType, 500);
  assert.equal(limits?.stream.maxStreamsPerPeer, 20_000);
  assert.equal(limits?.stream.firstRequestTimeoutMs, 5000);
  assert.equal(limits?.transport.minPingIntervalMs, 60_000);
  assert.equal(compileLimitOptions({ registries: 'mock' }), undefined);
});

for (const [key, value, flag] of [
  ['maxNamesPerType', '0', '--max-names-per-type'],
  ['maxStreamsPerPeer', 'many', '--max-streams-per-peer'],
  ['firstRequestTimeout', '0s', '--first-request-timeout'],
  ['maxConnectionIdle', 'soon', '--max-connection-idle'],
] as const)
  test(`${flag} ${value} is refused naming the flag`, () => {
    assert.throws(
      () => compileLimitOptions({ ...LIMIT_DEFAULTS, [key]: value }),
      (err: unknown) => err instanceof OptionError && err.message.startsWith(flag),
    );
  });
