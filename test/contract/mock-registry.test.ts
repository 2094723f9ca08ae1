// The registry contract against the mock registry. The mock is its own source: the harness writes
// through the same methods the admin API calls.
import { MockRegistry } from '../../adapters/mock/registry.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { registryContract, type ContractService, type SourceChange } from '../support/registry-contract.js';

registryContract({
  name: 'mock',
  capabilities: {
    // An in-memory registry has no source that could fail.
    sourceFails: false,
    failureAtStartHoldsSync: false,
    // Being its own source, a restored snapshot is its content from then on (MockRegistry.restore).
    restore: 'becomes-the-source',
    emptySourceAfterRestore: 'replaces',
  },
  quietMs: 300,
  async create(seed) {
    const registry = new MockRegistry();
    const hostname = (name: string): string => `${name}.mock.contract`;
    const write = ({ before, after }: SourceChange): void => {
      if (!after) {
        if (before) registry.deleteService(hostname(before.name));
        return;
      }
      const host = hostname(after.name);
      if (before?.protocol !== after.protocol)
        registry.putService(mockService(host, [servicePort('web', 8080, after.protocol)]));
      if (!sameAddresses(before, after))
        registry.setEndpoints(
          host,
          after.addresses.map((address) => endpoint(address, { web: 8080 })),
        );
    };
    for (const service of seed) write({ after: service });
    return {
      registry,
      hostname,
      write: async (change) => write(change),
      // Synchronous: a write has published (or not) before it returns, so there is nothing to wait for.
      settled: async () => {},
      close: async () => {},
    };
  },
});

function sameAddresses(a: ContractService | undefined, b: ContractService): boolean {
  return a !== undefined && a.addresses.join() === b.addresses.join();
}
