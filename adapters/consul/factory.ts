// `--registries consul`: builds the Consul registry from the `--consul-*` flags.
import type { RegistryFactory } from '../registry-factory.js';
import { createConsulClient } from './client.js';
import { addConsulFlags, parseConsulFlags } from './flags.js';
import { ConsulRegistry } from './registry.js';

export const consulRegistryFactory: RegistryFactory = {
  name: 'consul',
  addFlags: addConsulFlags,
  create({ flags, logger }) {
    const settings = parseConsulFlags(flags);
    return new ConsulRegistry({
      client: createConsulClient(settings),
      conversion: {
        domain: settings.domain,
        warningHealthy: settings.warningHealthy,
        datacenter: settings.datacenter ?? '',
      },
      logger,
      emptyHoldMs: settings.emptyHoldMs,
      syncTimeoutMs: settings.syncTimeoutMs,
      settings: {
        address: settings.url.origin,
        datacenter: settings.datacenter ?? "(the agent's)",
        token: settings.token ? 'set' : 'none',
        tls: settings.tls ? Object.keys(settings.tls) : [],
        domain: settings.domain,
        warningHealthy: settings.warningHealthy,
        waitMs: settings.waitMs,
        emptyHoldMs: settings.emptyHoldMs,
        syncTimeoutMs: settings.syncTimeoutMs,
      },
    });
  },
};
