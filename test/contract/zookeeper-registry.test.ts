// The registry contract against the zookeeper registry and a real ZooKeeper (Debian's package),
// with Curator instances. The registry connects through a TCP proxy, so that the harness can cut it
// off from a server that keeps running (and count its connections).
import { after, before } from 'node:test';
import { ZooKeeperRegistry } from '../../adapters/zookeeper/registry.js';
import { silentLogger } from '../../log/logger.js';
import { eventually } from '../support/eventually.js';
import { registryContract, type ContractService } from '../support/registry-contract.js';
import { curatorInstanceJson, ZkTestClient } from '../support/zookeeper-client.js';
import { startZooKeeperProxy } from '../support/zookeeper-proxy.js';
import { startZooKeeperServer, type ZooKeeperServer } from '../support/zookeeper-server.js';

let zk: ZooKeeperServer;
let writer: ZkTestClient;
let fixtures = 0;

before(async () => {
  zk = await startZooKeeperServer();
  writer = await ZkTestClient.connect(zk.connectString);
});

after(async () => {
  await writer.close();
  await zk.destroy();
});

registryContract({
  name: 'zookeeper',
  capabilities: {
    sourceFails: true,
    failureAtStartHoldsSync: true,
    restore: 'until-live-sync',
    emptySourceAfterRestore: 'replaces',
  },
  timeoutMs: 15_000,
  quietMs: 1000,
  async create(seed) {
    // Each fixture has a tree of its own on the one server.
    const root = `/contract-${++fixtures}`;
    const base = `${root}/services`;
    const node = (name: string, address: string): string => `${base}/${name}/${address}`;
    const put = async (service: ContractService, addresses: readonly string[]): Promise<void> => {
      for (const address of addresses) {
        const data = curatorInstanceJson({
          name: service.name,
          id: address,
          address,
          port: 8080,
          metadata: { protocol: service.protocol.toLowerCase() },
        });
        await writer.put(node(service.name, address), data);
      }
    };
    for (const service of seed) await put(service, service.addresses);
    await writer.put(base, undefined); // the base exists even with no service in it
    const proxy = await startZooKeeperProxy(zk.port);
    let cut = false;
    return {
      registry: new ZooKeeperRegistry({
        hosts: proxy.connectString,
        sessionTimeoutMs: 4000,
        layouts: ['curator'],
        curatorBase: base,
        curatorSuffix: 'service.zk',
        dubboRoot: `${root}/dubbo`,
        dubboSuffix: '',
        spinDelayMs: 100,
        startTimeoutMs: 3000,
        logger: silentLogger,
      }),
      hostname: (name) => `${name}.service.zk`,
      async write({ before, after }) {
        if (!after) {
          if (before) await writer.removeTree(`${base}/${before.name}`);
          return;
        }
        // Every instance carries the protocol: a new one rewrites them all.
        const known = before?.protocol === after.protocol ? before.addresses : [];
        await put(
          after,
          after.addresses.filter((a) => !known.includes(a)),
        );
        for (const gone of (before?.addresses ?? []).filter((a) => !after.addresses.includes(a)))
          await writer.remove(node(after.name, gone));
      },
      breakSource: async () => {
        cut = true;
        proxy.cut();
      },
      repairSource: async () => {
        proxy.restore();
        cut = false;
      },
      sourceActivity: () => proxy.connections(),
      async settled() {
        if (cut) {
          // Cut off, the client keeps reconnecting (spinDelayMs apart): a second attempt since the
          // call is made after the first was refused and handled.
          const attempts = proxy.connections();
          await eventually(() => proxy.connections() >= attempts + 2, {
            timeoutMs: 5000,
            what: 'two reconnection attempts',
          });
          return;
        }
        // A notification consumes its watch, and the registry sets it again by reading the node
        // again once it has handled the notification: the proxy sees every request answered, every
        // node of the tree read with a watch, and every notified one read again since. The last
        // answer may still be in the registry's socket: it reads it on the next I/O turn and
        // publishes on the turn's setImmediate, which two turns of this process outlast.
        const tree = new Set([base, ...(await descendants(base))]);
        await eventually(() => proxy.caughtUp(tree), { what: 'the registry to re-arm its watches' });
        for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
      },
      async close() {
        await proxy.close();
        await writer.removeTree(root);
      },
    };
  },
});

/** Every node below `path` (the services, then their instances). */
async function descendants(path: string): Promise<string[]> {
  const below: string[] = [];
  for (const child of await writer.children(path)) {
    below.push(`${path}/${child}`, ...(await descendants(`${path}/${child}`)));
  }
  return below;
}
