// The `consul` registry: one blocking watch on /v1/catalog/services, and one per listed service on
// /v1/health/service/NAME, started and stopped as services come and go. Each answer updates that
// service alone; a whole snapshot is published at most once per event-loop turn.
//
// Faults never shrink what is served: a failing watch keeps its service's last good instances, an
// empty health answer for a service the catalog still lists is not applied, and neither is an
// empty service list when services were known. Any of these marks the registry stale (status and
// metrics) with the reason, and clears once Consul answers properly again.
import type { Logger } from 'pino';
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';
import { StateBackedRegistry } from '../registry-state.js';
import { BlockingWatch, DEFAULT_PACING, type WatchPacing } from './blocking-watch.js';
import type { CatalogServices, HealthEntry } from './api.js';
import type { ConsulCatalogClient } from './client.js';
import { convertService, type ConversionOptions, type ConvertedService } from './conversion.js';

export interface ConsulRegistryOptions {
  readonly client: ConsulCatalogClient;
  readonly conversion: Omit<ConversionOptions, 'registry'>;
  readonly logger: Logger;
  readonly pacing?: WatchPacing;
  /** Settings shown in /debug/registryz (never the token). */
  readonly settings?: Readonly<Record<string, unknown>>;
}

interface ServiceWatch {
  readonly watch: BlockingWatch<HealthEntry[]>;
  /** Whether Consul answered once: the first sync waits for every listed service. */
  answered: boolean;
  converted: ConvertedService | undefined;
}

const MAX_DEBUG_ITEMS = 100;

export class ConsulRegistry extends StateBackedRegistry {
  readonly name = 'consul';
  private readonly conversion: ConversionOptions;
  private readonly pacing: WatchPacing;
  private readonly catalogWatch: BlockingWatch<CatalogServices>;
  private readonly watches = new Map<string, ServiceWatch>();
  /** The last applied service list; undefined until the first catalog answer. */
  private catalog: CatalogServices | undefined;
  /** Current faults by source (`catalog`, `catalog-empty`, `health/NAME`, `empty/NAME`): what makes the registry stale. */
  private readonly problems = new Map<string, string>();
  private collisions: string[] = [];
  private liveSynced = false;
  private publishScheduled = false;
  private stopped = false;
  private settleStart: (() => void) | undefined;
  private starting: Promise<void> | undefined;

  constructor(private readonly options: ConsulRegistryOptions) {
    super();
    this.conversion = { ...options.conversion, registry: this.name };
    this.pacing = options.pacing ?? DEFAULT_PACING;
    this.catalogWatch = new BlockingWatch(
      (index, signal) => options.client.services(index, signal),
      {
        onAnswer: (services, changed) => {
          this.clearProblem('catalog');
          if (changed) this.applyCatalog(services);
        },
        onError: (error) => this.setProblem('catalog', `catalog/services: ${this.explain(error)}`),
      },
      this.pacing,
    );
  }

  /** Resolves after the first full sync, or at the first failure (the watches keep retrying). */
  start(): Promise<void> {
    this.starting ??= new Promise<void>((resolve) => {
      this.settleStart = resolve;
      this.catalogWatch.start();
    });
    return this.starting;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.catalogWatch.stop();
    for (const w of this.watches.values()) w.watch.stop();
    this.watches.clear();
    this.options.client.close();
    this.settle();
  }

  debug(): unknown {
    let requests = this.catalogWatch.stats().requests;
    let indexResets = this.catalogWatch.stats().indexResets;
    const notes: Record<string, readonly string[]> = {};
    for (const [name, w] of this.watches) {
      const stats = w.watch.stats();
      requests += stats.requests;
      indexResets += stats.indexResets;
      const n = w.converted?.notes ?? [];
      if (n.length > 0 && Object.keys(notes).length < MAX_DEBUG_ITEMS) notes[name] = n;
    }
    return {
      settings: this.options.settings ?? {},
      catalog: { ...this.catalogWatch.stats(), services: this.catalog?.size ?? null },
      serviceWatches: this.watches.size,
      requests,
      indexResets,
      problems: [...this.problems]
        .slice(0, MAX_DEBUG_ITEMS)
        .map(([source, message]) => ({ source, message })),
      problemCount: this.problems.size,
      notes,
      hostnameCollisions: this.collisions,
    };
  }

  private applyCatalog(services: CatalogServices): void {
    const known = this.state.snapshot().services.size;
    if (services.size === 0 && known > 0) {
      this.setProblem(
        'catalog-empty',
        `Consul lists no services (ACL filtering, or a restored or wiped catalog?); keeping the ${known} known until it lists services again`,
      );
      return;
    }
    this.clearProblem('catalog-empty');
    for (const name of services.keys()) if (!this.watches.has(name)) this.watchService(name);
    for (const [name, w] of this.watches) {
      if (services.has(name)) continue;
      w.watch.stop();
      this.watches.delete(name);
      this.clearProblem(`health/${name}`);
      this.clearProblem(`empty/${name}`);
    }
    this.catalog = services;
    this.options.logger.debug({ services: services.size }, 'consul service list changed');
    this.schedulePublish();
  }

  private watchService(name: string): void {
    const entry: ServiceWatch = {
      answered: false,
      converted: undefined,
      watch: new BlockingWatch(
        (index, signal) => this.options.client.healthService(name, index, signal),
        {
          onAnswer: (entries, changed) => {
            this.clearProblem(`health/${name}`);
            if (changed) this.applyHealth(name, entry, entries);
          },
          onError: (error) =>
            this.setProblem(`health/${name}`, `health/service/${name}: ${this.explain(error)}`),
        },
        this.pacing,
      ),
    };
    this.watches.set(name, entry);
    entry.watch.start();
  }

  private applyHealth(name: string, entry: ServiceWatch, entries: readonly HealthEntry[]): void {
    entry.answered = true;
    const kept = entry.converted?.endpoints.length ?? 0;
    if (entries.length === 0 && kept > 0) {
      // The catalog still lists the service (its watch would be gone otherwise): a partial answer.
      this.setProblem(
        `empty/${name}`,
        `health/service/${name} returned no instances while the catalog lists it; keeping the ${kept} known`,
      );
      this.schedulePublish();
      return;
    }
    this.clearProblem(`empty/${name}`);
    entry.converted = convertService(name, entries, this.conversion);
    this.schedulePublish();
  }

  /**
   * A Consul agent closes connections from one client beyond `limits.http_max_conns_per_client`
   * (200 by default) as soon as they open; with one blocking query per service, that is a likely
   * cause of reset connections, so the reason says so.
   */
  private explain(error: Error): string {
    if (!/ECONNRESET|socket hang up/.test(error.message)) return error.message;
    return `${error.message} (if Consul is up: is limits.http_max_conns_per_client below the ${this.watches.size + 1} connections Portolan holds?)`;
  }

  private schedulePublish(): void {
    if (this.publishScheduled || this.stopped) return;
    this.publishScheduled = true;
    setImmediate(() => this.publish());
  }

  private publish(): void {
    this.publishScheduled = false;
    if (this.stopped || !this.catalog) return;
    // The first sync waits for every listed service, so no client is handed a partial mesh.
    if (!this.liveSynced && [...this.watches.values()].some((w) => !w.answered)) return;
    const services = new Map<string, Service>();
    const endpoints = new Map<string, readonly Endpoint[]>();
    const collisions: string[] = [];
    for (const name of [...this.watches.keys()].sort()) {
      const converted = this.watches.get(name)?.converted;
      const service = converted?.service;
      if (!converted || !service) continue;
      if (services.has(service.hostname)) {
        collisions.push(`${name}: ${service.hostname} is already served for another Consul service`);
        continue;
      }
      services.set(service.hostname, service);
      endpoints.set(service.hostname, converted.endpoints);
    }
    this.collisions = collisions;
    // Published even while some watches fail: what they last saw is kept, and the reason stays shown.
    this.state.replace({ services, endpoints }, this.problemError());
    this.liveSynced = true;
    this.reportStatus();
    this.settle();
  }

  private setProblem(source: string, message: string): void {
    const wasHealthy = this.problems.size === 0;
    this.problems.set(source, message);
    if (wasHealthy)
      this.options.logger.warn({ source, reason: message }, 'consul: serving the last good state');
    this.reportStatus();
    this.settle();
  }

  private clearProblem(source: string): void {
    if (!this.problems.delete(source)) return;
    if (this.problems.size === 0) this.options.logger.info('consul: every watch answers again');
    this.reportStatus();
  }

  /** Mirrors the current problems into the registry status (stale + reason), or clears them. */
  private reportStatus(): void {
    const problem = this.problemError();
    if (problem) this.state.fail(problem);
    else if (this.liveSynced && this.state.status().lastError !== undefined) {
      this.state.replace(this.state.snapshot()); // same content: clears the error, emits nothing
    }
  }

  private problemError(): Error | undefined {
    const first = this.problems.values().next();
    if (first.done) return undefined;
    const more = this.problems.size > 1 ? ` (and ${this.problems.size - 1} more)` : '';
    return new Error(`${first.value}${more}`);
  }

  private settle(): void {
    this.settleStart?.();
    this.settleStart = undefined;
  }
}
