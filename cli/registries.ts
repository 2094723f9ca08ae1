// The registries `--registries` can name, in the order --help lists them. Each is built by its own
// factory; a new registry adds its factory here.
import { consulRegistryFactory } from '../adapters/consul/factory.js';
import { kubernetesFactory } from '../adapters/kubernetes/factory.js';
import { mockRegistryFactory } from '../adapters/mock/factory.js';
import type { RegistryFactory } from '../adapters/registry-factory.js';
import { zookeeperFactory } from '../adapters/zookeeper/factory.js';
import { configDirFactory } from '../config-dir/factory.js';

export const REGISTRY_FACTORIES: readonly RegistryFactory[] = [
  configDirFactory,
  mockRegistryFactory,
  consulRegistryFactory,
  zookeeperFactory,
  kubernetesFactory,
];

export function knownRegistries(): string[] {
  return REGISTRY_FACTORIES.map((f) => f.name);
}
