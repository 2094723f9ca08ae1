// The registries `--registries` can name. Adapters for external sources add their factory here.
import type { RegistryFactory } from './registry-factory.js';

export const REGISTRY_FACTORIES: readonly RegistryFactory[] = [];

export const BUILT_IN_REGISTRIES = ['config', 'mock'] as const;

export function knownRegistries(): string[] {
  return [...BUILT_IN_REGISTRIES, ...REGISTRY_FACTORIES.map((f) => f.name)];
}
