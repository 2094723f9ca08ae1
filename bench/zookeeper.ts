// How long from a ZooKeeper write to (1) the zookeeper registry publishing it, in process, and (2) a
// proxyless gRPC client's calls reaching the new endpoint through `portolan serve`. A private
// ZooKeeper server (Debian's package), two Echo backends, the real grpc-js-xds client.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ZooKeeperRegistry } from '../adapters/zookeeper/registry.js';
import { callEcho, startEchoBackend, type EchoBackend } from '../test/support/echo-backend.js';
import { eventually } from '../test/support/eventually.js';
import { startPortolanProcess } from '../test/support/portolan-process.js';
import { xdsEchoClient } from '../test/support/xds-client.js';
import { curatorInstanceJson, ZkTestClient } from '../test/support/zookeeper-client.js';
import { startZooKeeperServer } from '../test/support/zookeeper-server.js';
import { printTable, summarize } from './table.js';

const ITERATIONS = 20;

function instance(id: string, backend: EchoBackend): string {
  return curatorInstanceJson({
    name: 'echo',
    id,
    address: backend.address,
    port: backend.port,
    metadata: { protocol: 'grpc' },
  });
}

export async function zookeeperLatency(): Promise<void> {
  const zk = await startZooKeeperServer();
  const writer = await ZkTestClient.connect(zk.connectString);
  const a = await startEchoBackend('a', '127.0.0.1');
  const b = await startEchoBackend('b', '127.0.0.2', a.port);
  const dir = mkdtempSync(join(tmpdir(), 'portolan-bench-zk-'));
  try {
    await writer.put('/services/echo/i0', instance('i0', a));
    const rows = [
      {
        what: 'data change → registry snapshot (in process)',
        ...summarize(await registryLatency(zk.connectString, writer, a, b)),
      },
    ];
    const portolan = await startPortolanProcess([
      '--registries',
      'zookeeper',
      '--zk-hosts',
      zk.connectString,
      '--zk-layouts',
      'curator',
      '--data-dir',
      join(dir, 'data'),
    ]);
    const client = xdsEchoClient(`xds:///echo.service.zk:${a.port}`, portolan.xdsAddress, 'bench-zk');
    try {
      await eventually(async () => {
        if ((await callEcho(client)) !== 'a') throw new Error('not yet on a');
      });
      const reached = async (backend: EchoBackend): Promise<void> =>
        eventually(
          async () => {
            if ((await callEcho(client)) !== backend.name) throw new Error('old endpoint');
          },
          { timeoutMs: 10_000, intervalMs: 2 },
        );
      const dataChange: number[] = [];
      for (let i = 0; i < ITERATIONS; i++) {
        const next = i % 2 === 0 ? b : a;
        const started = performance.now();
        await writer.set('/services/echo/i0', instance('i0', next));
        await reached(next);
        dataChange.push(performance.now() - started);
      }
      // An instance registering and the other leaving: child watches rather than data watches.
      const swap: number[] = [];
      let current = 'i0';
      for (let i = 0; i < ITERATIONS; i++) {
        const next = i % 2 === 0 ? b : a;
        const id = `n${i}`;
        const started = performance.now();
        await writer.put(`/services/echo/${id}`, instance(id, next), 'ephemeral');
        await writer.remove(`/services/echo/${current}`);
        await reached(next);
        swap.push(performance.now() - started);
        current = id;
      }
      rows.push({ what: 'data change → gRPC client on new endpoint', ...summarize(dataChange) });
      rows.push({ what: 'register + unregister → gRPC client on new endpoint', ...summarize(swap) });
    } finally {
      client.close();
      await portolan.stop();
    }
    printTable(
      `ZooKeeper write → effect (ms). Setup: private ZooKeeper 3.8 on loopback (tickTime 200 ms), one Curator service; in process: the registry alone; end to end: portolan serve child process, push window 100 ms, one grpc-js-xds client polling every 2 ms. ${ITERATIONS} writes each.`,
      rows,
    );
  } finally {
    await writer.close();
    await Promise.all([a.stop(), b.stop()]);
    await zk.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Data changes to one instance, timed from the write until the registry's change event. */
async function registryLatency(
  hosts: string,
  writer: ZkTestClient,
  a: EchoBackend,
  b: EchoBackend,
): Promise<number[]> {
  const registry = new ZooKeeperRegistry({
    hosts,
    sessionTimeoutMs: 15_000,
    layouts: ['curator'],
    curatorBase: '/services',
    curatorSuffix: 'service.zk',
    dubboRoot: '/dubbo',
    dubboSuffix: '',
  });
  await registry.start();
  const samples: number[] = [];
  try {
    for (let i = 0; i < ITERATIONS; i++) {
      const next = i % 2 === 0 ? b : a;
      const changed = new Promise<void>((resolve) => {
        const off = registry.onChange(() => {
          off();
          resolve();
        });
      });
      const started = performance.now();
      await writer.set('/services/echo/i0', instance('i0', next));
      await Promise.race([
        changed,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error('no change within 10 s')), 10_000).unref(),
        ),
      ]);
      samples.push(performance.now() - started);
    }
  } finally {
    await registry.stop();
  }
  // Leave the node pointing at a, where the end-to-end part starts.
  await writer.put('/services/echo/i0', instance('i0', a));
  return samples;
}
