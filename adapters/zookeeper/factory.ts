// `--registries zookeeper`: the registry's flags on `portolan serve`, and building it from them.
import type { Command } from 'commander';
import type { RegistryFactory } from '../registry-factory.js';
import { ZK_FLAG_DEFAULTS, parseZooKeeperFlags } from './flags.js';
import { ZooKeeperRegistry } from './registry.js';

export const zookeeperFactory: RegistryFactory = {
  name: 'zookeeper',

  addFlags(command: Command): void {
    command
      .option(
        '--zk-hosts <hosts>',
        'zookeeper: connection string host:port[,host:port…][/chroot]',
        ZK_FLAG_DEFAULTS.zkHosts,
      )
      .option(
        '--zk-session-timeout <duration>',
        'zookeeper: session timeout',
        ZK_FLAG_DEFAULTS.zkSessionTimeout,
      )
      .option(
        '--zk-layouts <list>',
        'zookeeper: layouts to read, in precedence order: curator, dubbo',
        ZK_FLAG_DEFAULTS.zkLayouts,
      )
      .option(
        '--zk-curator-base <path>',
        'zookeeper: Curator x-discovery base path (BASE/NAME/ID)',
        ZK_FLAG_DEFAULTS.zkCuratorBase,
      )
      .option(
        '--zk-curator-suffix <suffix>',
        'zookeeper: Curator services are named NAME.SUFFIX',
        ZK_FLAG_DEFAULTS.zkCuratorSuffix,
      )
      .option(
        '--zk-dubbo-root <path>',
        "zookeeper: Dubbo's registry root (ROOT/INTERFACE/providers)",
        ZK_FLAG_DEFAULTS.zkDubboRoot,
      )
      .option(
        '--zk-dubbo-suffix <suffix>',
        'zookeeper: appended to Dubbo hostnames as .SUFFIX (empty: the dubbo2istio hostname as is)',
        ZK_FLAG_DEFAULTS.zkDubboSuffix,
      )
      .option(
        '--zk-empty-hold <duration>',
        'zookeeper: a service whose every endpoint vanished right after a reconnect keeps its last endpoints, stale, this long (0: off)',
        ZK_FLAG_DEFAULTS.zkEmptyHold,
      );
  },

  create({ flags, logger }) {
    return new ZooKeeperRegistry({ ...parseZooKeeperFlags(flags), logger });
  },
};
