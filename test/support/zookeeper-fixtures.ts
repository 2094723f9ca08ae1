// Builders for zookeeper registry tests: a registry with test-friendly settings whose log lines are
// captured, and readers for what it publishes.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { ZooKeeperRegistry, type ZooKeeperRegistryConfig } from '../../adapters/zookeeper/registry.js';
import type { Endpoint } from '../../model/endpoint.js';

export interface CapturedRegistry {
  readonly registry: ZooKeeperRegistry;
  /** Every log line so far, parsed. */
  readonly logs: Record<string, unknown>[];
}

/** A started registry on `hosts`; its own base paths keep tests on one server apart. */
export async function startZkRegistry(
  hosts: string,
  overrides: Partial<ZooKeeperRegistryConfig> = {},
): Promise<CapturedRegistry> {
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const registry = new ZooKeeperRegistry({
    hosts,
    sessionTimeoutMs: 4000,
    layouts: ['curator', 'dubbo'],
    curatorBase: '/services',
    curatorSuffix: 'service.zk',
    dubboRoot: '/dubbo',
    dubboSuffix: '',
    spinDelayMs: 100,
    startTimeoutMs: 10_000,
    logger: pino({ level: 'debug' }, sink),
    ...overrides,
  });
  await registry.start();
  return { registry, logs };
}

/** `address:port` of each endpoint of `hostname`, sorted. */
export function endpointAddresses(registry: ZooKeeperRegistry, hostname: string): string[] {
  const list: readonly Endpoint[] = registry.snapshot().endpoints.get(hostname) ?? [];
  return list.map((e) => `${e.address}:${Object.values(e.ports).join('/')}`).sort();
}

export interface ZkDebug {
  readonly connection: string;
  /** The current session's id in hex (all zeros before the first connect). */
  readonly sessionId: string;
  readonly sessions: number;
  readonly resyncs: number;
  readonly resyncFailures: number;
  readonly unansweredConnections: number;
  readonly disabledInstances: number;
  readonly invalidNodeCount: number;
  readonly invalidNodes: { layout: string; path: string; reason: string }[];
  readonly layouts: { name: string; groups: number; instanceNodes: number; watches: number }[];
}

export function zkDebug(registry: ZooKeeperRegistry): ZkDebug {
  return registry.debug() as ZkDebug;
}
