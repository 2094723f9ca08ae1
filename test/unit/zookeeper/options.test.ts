// The --zk-* flags: defaults, validation with the flag named, and the factory building the registry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
// First, as in the CLI: the registry list imports every factory (and cli/options imports the list).
import { REGISTRY_FACTORIES } from '../../../cli/registries.js';
import { Backoff } from '../../../model/backoff.js';
import { parseZooKeeperFlags } from '../../../adapters/zookeeper/flags.js';
import { RESYNC_BACKOFF, ZooKeeperRegistry } from '../../../adapters/zookeeper/registry.js';
import { OptionError } from '../../../cli/options.js';
import { silentLogger } from '../../../log/logger.js';

test('the defaults', () => {
  assert.deepEqual(parseZooKeeperFlags({}), {
    hosts: '127.0.0.1:2181',
    sessionTimeoutMs: 15_000,
    layouts: ['curator', 'dubbo'],
    curatorBase: '/services',
    curatorSuffix: 'service.zk',
    dubboRoot: '/dubbo',
    dubboSuffix: '',
    emptyHoldMs: 300_000,
  });
});

test('valid values, as commander passes them', () => {
  const options = parseZooKeeperFlags({
    zkHosts: 'zk1:2181, zk2:2182,zk3/portolan/prod',
    zkSessionTimeout: '2.5s',
    zkLayouts: 'Dubbo',
    zkCuratorBase: '/spring/services',
    zkCuratorSuffix: '.Apps.Internal',
    zkDubboRoot: '/dubbo-prod',
    zkDubboSuffix: 'dubbo.zk',
  });
  assert.equal(options.hosts, 'zk1:2181,zk2:2182,zk3/portolan/prod');
  assert.equal(options.sessionTimeoutMs, 2500);
  assert.deepEqual(options.layouts, ['dubbo']);
  assert.equal(options.curatorBase, '/spring/services');
  assert.equal(options.curatorSuffix, 'apps.internal');
  assert.equal(options.dubboRoot, '/dubbo-prod');
  assert.equal(options.dubboSuffix, 'dubbo.zk');
  assert.equal(
    parseZooKeeperFlags({ zkHosts: '127.0.0.1:2181/' }).hosts,
    '127.0.0.1:2181',
    'a bare / is no chroot',
  );
});

test('bad values are refused with the flag named', () => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ zkHosts: '' }, /--zk-hosts: expected host:port/],
    [{ zkHosts: 'zk1:2181,,zk2' }, /--zk-hosts: expected host:port/],
    [{ zkHosts: '[::1]:2181' }, /--zk-hosts: .*IPv6/],
    [{ zkHosts: 'zk1:70000' }, /--zk-hosts: "zk1:70000" is not host:port/],
    [{ zkHosts: 'zk1/a//b' }, /--zk-hosts chroot: expected an absolute znode path/],
    [{ zkSessionTimeout: 'soon' }, /--zk-session-timeout: expected a duration/],
    [{ zkSessionTimeout: '50ms' }, /--zk-session-timeout: must be between/],
    [{ zkSessionTimeout: '1h' }, /--zk-session-timeout: expected a duration/],
    [{ zkLayouts: '' }, /--zk-layouts: name at least one/],
    [{ zkLayouts: 'curator,eureka' }, /--zk-layouts: unknown layout "eureka"/],
    [{ zkLayouts: 'dubbo,dubbo' }, /--zk-layouts: a layout is named twice/],
    [{ zkCuratorBase: 'services' }, /--zk-curator-base: expected an absolute znode path/],
    [{ zkCuratorBase: '/' }, /--zk-curator-base/],
    [{ zkCuratorBase: '/services/' }, /--zk-curator-base/],
    [{ zkDubboRoot: '/a/../b' }, /--zk-dubbo-root/],
    [{ zkCuratorSuffix: '' }, /--zk-curator-suffix: expected a DNS suffix/],
    [{ zkCuratorSuffix: 'bad_suffix' }, /--zk-curator-suffix/],
    [{ zkDubboSuffix: 'a..b' }, /--zk-dubbo-suffix/],
  ];
  for (const [flags, message] of bad) {
    assert.throws(
      () => parseZooKeeperFlags(flags),
      (err: unknown) => {
        assert.ok(err instanceof OptionError, `${JSON.stringify(flags)} throws an OptionError`);
        assert.match(err.message, message);
        return true;
      },
    );
  }
});

test('the zookeeper factory is registered, adds the flags to serve, and builds an unstarted registry', () => {
  const zookeeperFactory = REGISTRY_FACTORIES.find((f) => f.name === 'zookeeper');
  assert.ok(zookeeperFactory, '--registries zookeeper is known');
  const command = new Command('serve').exitOverride();
  zookeeperFactory.addFlags(command);
  command.parse(['--zk-hosts', '127.0.0.1:2999', '--zk-layouts', 'curator'], { from: 'user' });
  const flags = command.opts();
  assert.equal(flags.zkSessionTimeout, '15s', 'defaults show in --help and reach the factory');
  const registry = zookeeperFactory.create({ flags, dataDir: '/nonexistent', logger: silentLogger });
  assert.ok(registry instanceof ZooKeeperRegistry);
  assert.equal(registry.name, 'zookeeper');
  assert.equal(registry.hasSynced(), false);
  assert.deepEqual((registry.debug?.() as { hosts: string; connection: string }).hosts, '127.0.0.1:2999');
  assert.throws(
    () => zookeeperFactory.create({ flags: { ...flags, zkLayouts: 'x' }, dataDir: '', logger: silentLogger }),
    OptionError,
  );
});

test('backoff doubles from 250 ms up to 30 s, with 50–100% jitter, and resets', () => {
  const backoff = new Backoff(RESYNC_BACKOFF);
  const delays = Array.from({ length: 10 }, () => backoff.next());
  const ceilings = [250, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000];
  delays.forEach((d, i) => {
    const ceiling = ceilings[i] ?? 0;
    assert.ok(d >= ceiling / 2 && d <= ceiling, `attempt ${i}: ${d} within [${ceiling / 2}, ${ceiling}]`);
  });
  backoff.reset();
  assert.ok(backoff.next() <= 250);
});
