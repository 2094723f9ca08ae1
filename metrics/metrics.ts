// Prometheus metrics (prom-client), served at GET /metrics on the admin server. Gauges that mirror
// live state are computed at scrape time from the objects themselves, so nothing is kept twice.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry as MetricsRegistry } from 'prom-client';
import type { Registry } from '../model/registry.js';
import { LabelledHistogram } from './labelled-histogram.js';

/**
 * How often the event-loop lag histogram samples (prom-client's default is every 10 ms). Each sample
 * wakes the process: at 10 ms an idle server spent ~10 ms of CPU a second on it alone, five times
 * its other idle work; every 100 ms still records any stall that outlasts a sample's interval.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

export class PortolanMetrics {
  readonly registry = new MetricsRegistry();
  readonly pushes: Counter<'kind'>;
  readonly nacks: Counter<'type'>;
  readonly streamsRefused: Counter<'reason'>;
  readonly responses: Counter<'type'>;
  readonly storeWriteErrors: Counter;
  readonly resourcesSent: Counter<'type'>;
  readonly bytesSent: Counter<'type'>;
  /** Observed per response: plain bucket counts per type (labelled-histogram.ts). */
  readonly responseBuildSeconds: LabelledHistogram;
  readonly pushSeconds: Histogram<'kind'>;
  readonly convergenceSeconds: Histogram<'kind'>;
  readonly debounceSeconds: Histogram;
  readonly changesPerPush: Histogram;
  readonly modelChanges: Counter<'kind'>;
  private readonly flushers: (() => void)[] = [];

  /**
   * Runs `flush` whenever the per-response counters are read: an observer may count responses in
   * plain numbers (a labelled prom-client increment per response costs more than building it) and
   * hand them over here.
   */
  onCollect(flush: () => void): void {
    this.flushers.push(flush);
  }

  private flush(): void {
    for (const f of this.flushers) f();
  }

  constructor() {
    // prom-client's default metrics already start with process_ or nodejs_: the prefix is just ours.
    collectDefaultMetrics({
      register: this.registry,
      prefix: 'portolan_',
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });
    this.pushes = new Counter({
      name: 'portolan_xds_pushes_total',
      help: 'Pushes (debounced batches of changes), by kind: eds (endpoints only), services, config',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    this.nacks = new Counter({
      name: 'portolan_xds_nacks_total',
      help: 'Responses rejected by clients (NACK), by type',
      labelNames: ['type'],
      registers: [this.registry],
    });
    this.streamsRefused = new Counter({
      name: 'portolan_xds_streams_refused_total',
      help: 'ADS streams a limit refused or ended, by reason: unauthenticated, peer-limit, first-request-timeout, names-limit, node-bounds',
      labelNames: ['reason'],
      registers: [this.registry],
    });
    this.responses = new Counter({
      name: 'portolan_xds_responses_total',
      help: 'DiscoveryResponses sent, by type',
      labelNames: ['type'],
      collect: () => this.flush(),
      registers: [this.registry],
    });
    const registers = [this.registry];
    this.resourcesSent = new Counter({
      name: 'portolan_xds_resources_sent_total',
      help: 'Resources sent in responses, by type',
      labelNames: ['type'],
      collect: () => this.flush(),
      registers,
    });
    this.bytesSent = new Counter({
      name: 'portolan_xds_response_bytes_total',
      help: 'Bytes of responses sent (protobuf, before gRPC framing), by type',
      labelNames: ['type'],
      collect: () => this.flush(),
      registers,
    });
    this.responseBuildSeconds = new LabelledHistogram(
      'portolan_xds_response_build_seconds',
      'Time to build one response for one stream (cache lookups, diff, framing), by type',
      'type',
      [0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5],
      registers,
    );
    this.pushSeconds = new Histogram({
      name: 'portolan_xds_push_seconds',
      help: 'Time to apply a push: rebuild what changed and hand the work to every affected stream',
      labelNames: ['kind'],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    });
    this.convergenceSeconds = new Histogram({
      name: 'portolan_xds_convergence_seconds',
      help: 'From the first change of a push being seen to the last affected stream having sent it',
      labelNames: ['kind'],
      buckets: [0.01, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5, 10, 30],
      registers,
    });
    this.debounceSeconds = new Histogram({
      name: 'portolan_xds_debounce_seconds',
      help: 'From the first change of a push being seen to the push starting (time spent merging)',
      buckets: [0.01, 0.05, 0.1, 0.15, 0.2, 0.5, 1, 5, 10],
      registers,
    });
    this.changesPerPush = new Histogram({
      name: 'portolan_xds_changes_merged',
      help: 'Change events merged into one push',
      buckets: [1, 2, 5, 10, 20, 50, 100, 500],
      registers,
    });
    this.modelChanges = new Counter({
      name: 'portolan_model_changes_total',
      help: 'Change events from the registries (after aggregation), by kind: endpoints or services',
      labelNames: ['kind'],
      registers,
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

  /** Live gauges of the ADS server, read when scraped. */
  watchAds(ads: {
    readonly streams: () => readonly { api: string; kind: string; count: number }[];
    readonly queued: () => number;
    readonly inFlight: () => number;
    readonly admissionRate?: () => number;
    readonly cachedResources: () => number;
    readonly cachedViews?: () => readonly { kind: string; typeUrl: string; views: number }[];
  }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'portolan_xds_connected_streams',
      help: 'ADS streams currently open',
      registers,
      collect() {
        this.set(ads.streams().reduce((n, s) => n + s.count, 0));
      },
    });
    new Gauge({
      name: 'portolan_xds_connected_streams_by_kind',
      help: 'ADS streams currently open, by protocol variant (sotw, delta) and kind of client (grpc, envoy)',
      labelNames: ['api', 'kind'],
      registers,
      collect() {
        this.reset();
        for (const s of ads.streams()) this.set({ api: s.api, kind: s.kind }, s.count);
      },
    });
    const gauge = (name: string, help: string, read: () => number): void => {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    };
    gauge(
      'portolan_xds_push_queue_depth',
      'Streams waiting for a push slot or a new-stream token',
      ads.queued,
    );
    gauge('portolan_xds_push_in_flight', 'Responses written and not yet drained', ads.inFlight);
    if (ads.admissionRate)
      gauge(
        'portolan_xds_new_stream_admission_rate',
        'New streams given their first response per second now: --push-new-streams-per-second plus what the load allows',
        ads.admissionRate,
      );
    gauge('portolan_xds_cached_resources', 'Encoded resources in the shared cache', ads.cachedResources);
    const views = ads.cachedViews;
    if (views)
      new Gauge({
        name: 'portolan_xds_cache_views',
        help:
          'Views open streams hold in the shared cache, by kind of client and type: streams of one view share ' +
          'encoded resources, and a change rebuilds once per view',
        labelNames: ['kind', 'type'],
        registers,
        collect() {
          this.reset();
          for (const v of views())
            this.set({ kind: v.kind, type: v.typeUrl.slice(v.typeUrl.lastIndexOf('.') + 1) }, v.views);
        },
      });
  }

  /** Counts each registry's change events and failed syncs. */
  countRegistryEvents(registries: readonly Registry[]): void {
    const events = new Counter({
      name: 'portolan_registry_events_total',
      help: 'Change events published by each registry',
      labelNames: ['registry'],
      registers: [this.registry],
    });
    for (const r of registries) r.onChange(() => events.inc({ registry: r.name }));
    const errors = new Counter({
      name: 'portolan_registry_errors_total',
      help: 'Failed syncs reported by each registry (its source failed; the last good state stays served)',
      labelNames: ['registry'],
      registers: [this.registry],
    });
    for (const r of registries)
      r.onSyncEvent?.((e) => e.kind === 'failed' && errors.inc({ registry: r.name }));
  }
}
