// The registry contract against the consul registry, reading the stand-in Consul agent.
import { createConsulClient } from '../../adapters/consul/client.js';
import { ConsulRegistry } from '../../adapters/consul/registry.js';
import { silentLogger } from '../../log/logger.js';
import { eventually } from '../support/eventually.js';
import { ConsulStandin } from '../support/consul-standin.js';
import { registryContract, type ContractService } from '../support/registry-contract.js';

// Long blocking reads: stop() has to abort them (the stop test's quiet period is shorter).
const WAIT_MS = 5000;

registryContract({
  name: 'consul',
  capabilities: {
    sourceFails: true,
    failureAtStartHoldsSync: true,
    restore: 'until-live-sync',
    // Consul lists itself, so an empty service list is taken for ACL filtering or a wiped catalog,
    // and a restored snapshot counts as known services (docs/registry-consul.md, "Faults").
    emptySourceAfterRestore: 'is-distrusted',
  },
  quietMs: 1000,
  async create(seed) {
    const standin = await ConsulStandin.start({ consulService: false });
    const register = (service: ContractService, addresses: readonly string[]): void => {
      for (const address of addresses) {
        standin.register({
          ID: instanceId(service.name, address),
          Name: service.name,
          Address: address,
          Port: 8080,
          Meta: { protocol: service.protocol.toLowerCase() },
        });
      }
    };
    const deregister = (name: string, addresses: readonly string[]): void => {
      for (const address of addresses) standin.deregister(instanceId(name, address));
    };
    for (const service of seed) register(service, service.addresses);
    /** Reads of a watched resource so far. */
    const readsOf = (resource: string): number =>
      resource === 'catalog'
        ? standin.counts.catalog
        : (standin.healthCounts.get(resource.slice('health:'.length)) ?? 0);
    /** What the registry watches: the catalog, and each listed service it has read once. */
    const watched = (): string[] => [
      'catalog',
      ...standin
        .catalogNames()
        .filter((name) => standin.healthCounts.has(name))
        .map((name) => `health:${name}`),
    ];
    return {
      registry: new ConsulRegistry({
        client: createConsulClient({ url: new URL(standin.url), waitMs: WAIT_MS }),
        conversion: { domain: 'service.consul', warningHealthy: true, datacenter: 'dc1' },
        logger: silentLogger,
        pacing: {
          backoff: { initialMs: 20, maxMs: 200, jitter: 0.5 },
          rateLimit: { burst: 5, intervalMs: 20 },
        },
      }),
      hostname: (name) => `${name}.service.consul`,
      async write({ before, after }) {
        if (!after) {
          if (before) deregister(before.name, before.addresses);
          return;
        }
        // Every instance carries the protocol: a new one re-registers them all.
        const known = before?.protocol === after.protocol ? before.addresses : [];
        register(
          after,
          after.addresses.filter((a) => !known.includes(a)),
        );
        deregister(
          after.name,
          (before?.addresses ?? []).filter((a) => !after.addresses.includes(a)),
        );
      },
      breakSource: async () => standin.failReads({ status: 500, message: 'No cluster leader' }),
      repairSource: async () => standin.failReads(undefined),
      sourceActivity: () => standin.counts.total,
      // Each watch asks again only once it has handled the previous answer: settled when every
      // watch is blocked on the stand-in (nothing answered is left unhandled), or has asked again
      // since the call (what was answered before the call is handled; a failing source is
      // retried after backoff, so this also proves a failure was handled).
      async settled() {
        const before = new Map(watched().map((resource) => [resource, readsOf(resource)]));
        await eventually(
          () =>
            [...before].every(
              ([resource, reads]) => standin.isBlocking(resource) || readsOf(resource) > reads,
            ),
          { what: `each of ${[...before.keys()].join(', ')} to be blocked or read again` },
        );
      },
      close: () => standin.stop(),
    };
  },
});

function instanceId(name: string, address: string): string {
  return `${name}-${address}`;
}
