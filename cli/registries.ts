// The registries `--registries` can name. Adapters for external sources add their factory here.
import { consulRegistryFactory } from '../adapters/consul/factory.js';
import { zookeeperFactory } from '../adapters/zookeeper/factory.js';
import { kubernetesFactory } from '../adapters/kubernetes/factory.js';
import type { RegistryFactory } from '../adapters/registry-factory.js';

export const REGISTRY_FACTORIES: readonly RegistryFactory[] = [
  consulRegistryFactory,
  zookeeperFactory,
  kubernetesFactory,
];

export const BUILT_IN_REGISTRIES = ['config', 'mock'] as const;

export function knownRegistries(): string[] {
  return [...BUILT_IN_REGISTRIES, ...REGISTRY_FACTORIES.map((f) => f.name)];
}
