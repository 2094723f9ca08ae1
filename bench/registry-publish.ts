// The Consul and ZooKeeper registries' cost of one change as the mesh grows, in process: N services
// registered (the stand-in Consul in this process; a private real ZooKeeper server), one service
// changed at a time, each change awaited until the registry announces it. Reported per change: the
// registry's publish (its synchronous work from the batched changes to the new snapshot and its
// diff, timed around the adapter's publish method) and this whole process's CPU (for Consul it
// includes the stand-in answering the blocking query and the client parsing the answer).
import { createConsulClient } from '../adapters/consul/client.js';
import { ConsulRegistry } from '../adapters/consul/registry.js';
import { ZooKeeperRegistry } from '../adapters/zookeeper/registry.js';
import { silentLogger } from '../log/logger.js';
import type { Registry } from '../model/registry.js';
import { ConsulStandin } from '../test/support/consul-standin.js';
import { eventually } from '../test/support/eventually.js';
import { curatorInstanceJson, ZkTestClient } from '../test/support/zookeeper-client.js';
import { startZooKeeperServer } from '../test/support/zookeeper-server.js';
import { percentile, printTable } from './table.js';

const CHANGES = 40;
/** Services changed in turn (Consul rate-limits each watch's re-reads). */
const ROTATION = 20;

export async function registryPublishBench(sizes: readonly number[] = [1000, 10_000]): Promise<void> {
  const rows: Record<string, string>[] = [];
  for (const n of sizes) rows.push(await consulAt(n));
  for (const n of sizes) rows.push(await zookeeperAt(n));
  printTable(
    `Registry publish per change (${CHANGES} changes, one service each, awaited one by one): the adapter's publish (ms, median / p99) and the process CPU per change (ms).`,
    rows,
  );
}

/** Times every call of the registry's (private) publish method. */
function timePublish(registry: object): number[] {
  const samples: number[] = [];
  const target = registry as { publish: (...args: unknown[]) => unknown };
  const original = target.publish.bind(registry);
  target.publish = (...args: unknown[]) => {
    const started = performance.now();
    try {
      return original(...args);
    } finally {
      samples.push(performance.now() - started);
    }
  };
  return samples;
}

async function measure(
  source: string,
  n: number,
  registry: Registry,
  samples: number[],
  change: (i: number) => Promise<void> | void,
): Promise<Record<string, string>> {
  samples.length = 0;
  const cpu = process.cpuUsage();
  for (let i = 0; i < CHANGES; i++) {
    const changed = new Promise<void>((resolve) => {
      const off = registry.onChange(() => {
        off();
        resolve();
      });
    });
    await change(i);
    await Promise.race([
      changed,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('no change within 30 s')), 30_000).unref(),
      ),
    ]);
  }
  const used = process.cpuUsage(cpu);
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    source,
    services: String(n),
    publishes: String(samples.length),
    'publish median (ms)': percentile(sorted, 50).toFixed(2),
    'publish p99 (ms)': percentile(sorted, 99).toFixed(2),
    'process CPU per change (ms)': ((used.user + used.system) / 1000 / CHANGES).toFixed(2),
  };
}

async function consulAt(n: number): Promise<Record<string, string>> {
  const standin = await ConsulStandin.start({ maxConnsPerClient: n + 100 });
  standin.registerMany(
    Array.from({ length: n }, (_, i) => ({
      Name: `svc-${i}`,
      ID: `svc-${i}`,
      Address: `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`,
      Port: 9000,
    })),
  );
  const registry = new ConsulRegistry({
    client: createConsulClient({ url: new URL(standin.url), waitMs: 60_000 }),
    conversion: { domain: 'service.consul', warningHealthy: true, datacenter: 'dc1' },
    logger: silentLogger,
  });
  const samples = timePublish(registry);
  try {
    await registry.start();
    await eventually(
      () => {
        if (!registry.hasSynced()) throw new Error('not synced');
      },
      { timeoutMs: 300_000 },
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return await measure('consul (stand-in)', n, registry, samples, (i) => {
      const k = i % ROTATION;
      standin.setCheck(`service:svc-${k}`, Math.floor(i / ROTATION) % 2 === 0 ? 'critical' : 'passing');
    });
  } finally {
    await registry.stop();
    await standin.stop();
  }
}

async function zookeeperAt(n: number): Promise<Record<string, string>> {
  const zk = await startZooKeeperServer();
  const writer = await ZkTestClient.connect(zk.connectString, 30_000);
  const node = (i: number, port: number): string =>
    curatorInstanceJson({
      name: `svc-${i}`,
      id: 'i0',
      address: `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`,
      port,
      metadata: { protocol: 'grpc' },
    });
  const registry = new ZooKeeperRegistry({
    hosts: zk.connectString,
    sessionTimeoutMs: 30_000,
    startTimeoutMs: 300_000,
    layouts: ['curator'],
    curatorBase: '/services',
    curatorSuffix: 'service.zk',
    dubboRoot: '/dubbo',
    dubboSuffix: '',
  });
  const samples = timePublish(registry);
  try {
    const batch = 200;
    for (let i = 0; i < n; i += batch) {
      await Promise.all(
        Array.from({ length: Math.min(batch, n - i) }, (_, j) =>
          writer.put(`/services/svc-${i + j}/i0`, node(i + j, 9000)),
        ),
      );
    }
    await registry.start();
    await eventually(
      () => {
        if (registry.snapshot().services.size < n) throw new Error('not synced');
      },
      { timeoutMs: 300_000 },
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return await measure('zookeeper (real server)', n, registry, samples, (i) =>
      writer.set(`/services/svc-${i % ROTATION}/i0`, node(i % ROTATION, 9001 + i)),
    );
  } finally {
    await registry.stop();
    await writer.close();
    await zk.destroy();
  }
}

if (process.argv[1]?.endsWith('registry-publish.js')) {
  const sizes = process.argv.slice(2).map(Number);
  await registryPublishBench(sizes.length > 0 ? sizes : undefined);
}
