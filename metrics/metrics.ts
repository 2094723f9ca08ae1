// Prometheus metrics (prom-client), served at GET /metrics on the admin server. Gauges that mirror
// live state are computed at scrape time from the objects themselves, so nothing is kept twice.
import { collectDefaultMetrics, Counter, Gauge, Registry as MetricsRegistry } from 'prom-client';
import type { Registry } from '../adapters/registry.js';

export class PortolanMetrics {
  readonly registry = new MetricsRegistry();
  readonly pushes: Counter<'kind'>;
  readonly nacks: Counter<'type'>;
  readonly responses: Counter<'type'>;
  readonly storeWriteErrors: Counter;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'portolan_process_' });
    this.pushes = new Counter({
      name: 'portolan_xds_pushes_total',
      help: 'Pushes triggered by model or config changes, by kind (full or eds)',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    this.nacks = new Counter({
      name: 'portolan_xds_nacks_total',
      help: 'Responses rejected by clients (NACK), by type',
      labelNames: ['type'],
      registers: [this.registry],
    });
    this.responses = new Counter({
      name: 'portolan_xds_responses_total',
      help: 'DiscoveryResponses sent, by type',
      labelNames: ['type'],
      registers: [this.registry],
    });
    this.storeWriteErrors = new Counter({
      name: 'portolan_store_write_errors_total',
      help: 'Writes to the SQLite store that failed (serving continued from memory)',
      registers: [this.registry],
    });
  }

  /** Live gauges read from the registries when scraped. */
  watchRegistries(registries: readonly Registry[]): void {
    const each = (name: string, help: string, read: (r: Registry) => number): void => {
      new Gauge({
        name,
        help,
        labelNames: ['registry'],
        registers: [this.registry],
        collect() {
          for (const r of registries) this.set({ registry: r.name }, read(r));
        },
      });
    };
    each('portolan_registry_synced', '1 once the registry completed its first sync', (r) =>
      Number(r.hasSynced()),
    );
    each(
      'portolan_registry_stale',
      '1 while the registry serves its last good state because its source fails',
      (r) => Number(r.status().stale),
    );
    each('portolan_registry_services', 'Services the registry currently reports', (r) => r.status().services);
    each(
      'portolan_registry_endpoints',
      'Endpoints the registry currently reports',
      (r) => r.status().endpoints,
    );
  }

  /** A live gauge of connected ADS streams. */
  watchStreams(count: () => number): void {
    new Gauge({
      name: 'portolan_xds_connected_streams',
      help: 'ADS streams currently open',
      registers: [this.registry],
      collect() {
        this.set(count());
      },
    });
  }
}
