// `--registries mock`: the in-memory registry the admin API writes to (/mock/*). No flags.
import type { RegistryFactory } from '../registry-factory.js';
import { MockRegistry } from './registry.js';

export const mockRegistryFactory: RegistryFactory<MockRegistry> = {
  name: 'mock',
  addFlags() {}, // none: the admin API is its input
  create: () => new MockRegistry(),
};
