// The `consul` registry: one blocking watch on /v1/catalog/services, and one per listed service on
// /v1/health/service/NAME, started and stopped as services come and go. Each answer updates that
// service alone; a snapshot is published at most once per event-loop turn. After the first sync a
// publish costs what changed: the hostnames touched since the last one are recomputed and replaced in
// the last snapshot (layered maps), and only they are diffed.
//
// Faults never shrink what is served: a failing watch keeps its service's last good instances, an
// empty health answer for a service the catalog still lists is held back for --consul-empty-hold
// (adapters/vanish-hold.ts, the rule the ZooKeeper registry shares), and an empty service list
// when services were known is not applied. Any of these marks the registry stale (status and
// metrics) with the reason, and clears once Consul answers properly again.
//
// The first sync waits for every listed service, so that no client is handed a partial mesh — but
// only for --consul-sync-timeout after the service list answered: a service whose query keeps
// failing must not keep every stream refused forever. Past it the registry is ready without that
// service (a stored snapshot's copy of it is kept), reports it in status().incomplete (/ready) and
// as a problem (stale), and adds it when it answers.
import type { Logger } from 'pino';
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';
import { LayeredMap } from '../../model/layered-map.js';
import { StateBackedRegistry } from '../registry-state.js';
import { BlockingWatch, DEFAULT_PACING, type WatchPacing } from './blocking-watch.js';
import type { CatalogServices, HealthEntry } from './api.js';
import type { ConsulCatalogClient } from './client.js';
import { convertService, hostnameFor, type ConversionOptions, type ConvertedService } from './conversion.js';
import type { RegistryStatus } from '../../model/registry.js';
import type { RegistrySnapshot } from '../../model/change.js';
import { parseDurationMs } from '../option-values.js';
import { DEFAULT_VANISH_HOLD, VanishHold } from '../vanish-hold.js';
import { RecoveryProbe } from '../recovery-probe.js';

export interface ConsulRegistryOptions {
  readonly client: ConsulCatalogClient;
  readonly conversion: Omit<ConversionOptions, 'registry'>;
  readonly logger: Logger;
  readonly pacing?: WatchPacing;
  /** Settings shown in /debug/registryz (never the token). */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** How long a listed service answering with no instances keeps its last ones; default 5 minutes. */
  readonly emptyHoldMs?: number;
  /** How long the first sync waits for every listed service; default 30 s. */
  readonly syncTimeoutMs?: number;
  /** While watches back off, how often Consul is probed for its return (default 1 s). */
  readonly probeIntervalMs?: number;
}

const DEFAULT_SYNC_TIMEOUT_MS = 30_000;

interface ServiceWatch {
  readonly watch: BlockingWatch<HealthEntry[]>;
  /** Whether Consul answered once: the first sync waits for every listed service. */
  answered: boolean;
  converted: ConvertedService | undefined;
  /** Its latest answer was empty and is held back (applied when the hold runs out). */
  emptyHeld: boolean;
}

const MAX_DEBUG_ITEMS = 100;

export class ConsulRegistry extends StateBackedRegistry {
  readonly name = 'consul';
  private readonly conversion: ConversionOptions;
  private readonly pacing: WatchPacing;
  private readonly recovery: RecoveryProbe | undefined;
  private readonly catalogWatch: BlockingWatch<CatalogServices>;
  private readonly watches = new Map<string, ServiceWatch>();
  /** The last applied service list; undefined until the first catalog answer. */
  private catalog: CatalogServices | undefined;
  /** Current faults by source (`catalog`, `catalog-empty`, `health/NAME`, `empty/NAME`): what makes the registry stale. */
  private readonly problems = new Map<string, string>();
  /** Per hostname, the Consul names that lost it to another (debug()). */
  private readonly collisions = new Map<string, string[]>();
  /** hostname → the listed Consul names that map to it (two names can: `A` and `a`). */
  private readonly namesByHost = new Map<string, Set<string>>();
  /** Hostnames whose Consul names changed since the last publish. */
  private readonly dirtyHosts = new Set<string>();
  /** Listed services Consul has not answered for yet (status() reads this on every save). */
  private unansweredCount = 0;
  private liveSynced = false;
  private publishScheduled = false;
  private stopped = false;
  private settleStart: (() => void) | undefined;
  private starting: Promise<void> | undefined;
  private readonly hold: VanishHold;
  private readonly syncTimeoutMs: number;
  private syncTimer: NodeJS.Timeout | undefined;
  /** The first sync's wait ran out: publish without the services that have not answered. */
  private syncWaitOver = false;

  constructor(private readonly options: ConsulRegistryOptions) {
    super();
    this.conversion = { ...options.conversion, registry: this.name };
    // One probe for all the watches: after an outage, they all resume once Consul answers again.
    const leader = options.client.leader?.bind(options.client);
    this.recovery = leader && new RecoveryProbe(leader, options.probeIntervalMs);
    this.pacing = {
      ...(options.pacing ?? DEFAULT_PACING),
      ...(this.recovery && { recovery: this.recovery }),
    };
    this.hold = new VanishHold({
      holdMs: options.emptyHoldMs ?? parseDurationMs(DEFAULT_VANISH_HOLD, '--consul-empty-hold'),
      expired: () => this.applyExpiredHolds(),
    });
    this.syncTimeoutMs = options.syncTimeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS;
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
    clearTimeout(this.syncTimer);
    this.hold.stop();
    this.recovery?.stop();
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
      ...(this.recovery && { recoveryProbe: this.recovery.stats() }),
      requests,
      indexResets,
      problems: [...this.problems]
        .slice(0, MAX_DEBUG_ITEMS)
        .map(([source, message]) => ({ source, message })),
      problemCount: this.problems.size,
      notes,
      hostnameCollisions: [...this.collisions.values()].flat().sort(),
      emptyHold: {
        holdMs: this.hold.holdMs,
        held: this.hold.held(MAX_DEBUG_ITEMS),
        heldCount: this.hold.size,
      },
      firstSync: {
        timeoutMs: this.syncTimeoutMs,
        waitedOut: this.syncWaitOver,
        unanswered: this.unanswered().slice(0, MAX_DEBUG_ITEMS),
      },
    };
  }

  /** With `incomplete`: the listed services the registry became ready without, and why. */
  override status(): RegistryStatus {
    const base = super.status();
    if (!this.liveSynced || this.unansweredCount === 0) return base;
    const missing = this.unanswered();
    if (missing.length === 0) return base;
    const reason = (name: string): string =>
      this.problems.get(`health/${name}`) ?? `health/service/${name}: no answer yet`;
    const shown = missing.slice(0, MAX_DEBUG_ITEMS).map((name) => `${name} (${reason(name)})`);
    if (missing.length > shown.length) shown.push(`and ${missing.length - shown.length} more`);
    return { ...base, incomplete: shown };
  }

  private unanswered(): string[] {
    return [...this.watches].filter(([, w]) => !w.answered).map(([name]) => name);
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
    if (this.catalog === undefined) this.startSyncTimer();
    for (const name of services.keys()) if (!this.watches.has(name)) this.watchService(name);
    for (const [name, w] of this.watches) {
      if (services.has(name)) continue;
      w.watch.stop();
      this.watches.delete(name);
      if (!w.answered) this.unansweredCount--;
      this.unindex(name);
      this.hold.release(name);
      this.clearProblem(`health/${name}`);
      this.clearProblem(`empty/${name}`);
      this.clearProblem(`unsynced/${name}`);
    }
    this.catalog = services;
    this.options.logger.debug({ services: services.size }, 'consul service list changed');
    this.schedulePublish();
  }

  private watchService(name: string): void {
    const entry: ServiceWatch = {
      answered: false,
      converted: undefined,
      emptyHeld: false,
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
    this.unansweredCount++;
    const host = hostnameFor(name, this.conversion.domain);
    if (host !== undefined) {
      const names = this.namesByHost.get(host) ?? new Set<string>();
      names.add(name);
      this.namesByHost.set(host, names);
      this.dirtyHosts.add(host);
    }
    entry.watch.start();
  }

  private unindex(name: string): void {
    const host = hostnameFor(name, this.conversion.domain);
    if (host === undefined) return;
    const names = this.namesByHost.get(host);
    names?.delete(name);
    if (names?.size === 0) this.namesByHost.delete(host);
    this.dirtyHosts.add(host);
  }

  private markDirty(name: string): void {
    const host = hostnameFor(name, this.conversion.domain);
    if (host !== undefined) this.dirtyHosts.add(host);
  }

  private applyHealth(name: string, entry: ServiceWatch, entries: readonly HealthEntry[]): void {
    if (!entry.answered) {
      entry.answered = true;
      this.unansweredCount--;
      this.markDirty(name);
    }
    this.clearProblem(`unsynced/${name}`);
    const kept = entry.converted?.endpoints.length ?? 0;
    // The catalog still lists the service (its watch would be gone otherwise): an empty answer is a
    // partial one until the hold runs out.
    if (this.hold.decide(name, kept, entries.length, true) === 'hold') {
      entry.emptyHeld = true;
      this.setProblem(
        `empty/${name}`,
        `health/service/${name} returned no instances while the catalog lists it; keeping the ${kept} known until ${this.hold.until(name) ?? '?'} (--consul-empty-hold)`,
      );
      this.schedulePublish();
      return;
    }
    entry.emptyHeld = false;
    this.clearProblem(`empty/${name}`);
    const converted = convertService(name, entries, this.conversion);
    // A hold that ran out: Consul still lists the service, so it stays, with no endpoints.
    const listed =
      entries.length === 0 && converted.service === undefined ? entry.converted?.service : undefined;
    entry.converted = listed ? { service: listed, endpoints: [], notes: converted.notes } : converted;
    this.markDirty(name);
    this.schedulePublish();
  }

  /** Applies the empty answers whose hold ran out. */
  private applyExpiredHolds(): void {
    if (this.stopped) return;
    for (const [name, w] of this.watches) if (w.emptyHeld) this.applyHealth(name, w, []);
  }

  /** At the first service list: the first sync waits this long for every listed service, no longer. */
  private startSyncTimer(): void {
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      if (this.liveSynced || this.stopped) return;
      this.syncWaitOver = true;
      const missing = this.unanswered();
      for (const name of missing)
        this.setProblem(
          `unsynced/${name}`,
          `health/service/${name} has not answered since start; ready without it after ${this.syncTimeoutMs} ms (--consul-sync-timeout)`,
        );
      this.options.logger.warn(
        { missing: missing.slice(0, MAX_DEBUG_ITEMS), count: missing.length, timeoutMs: this.syncTimeoutMs },
        'consul: first sync goes ahead without the services that have not answered',
      );
      this.publish();
    }, this.syncTimeoutMs);
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
    // The first sync waits for every listed service, so no client is handed a partial mesh (for
    // --consul-sync-timeout at most).
    if (!this.liveSynced && !this.syncWaitOver && this.unansweredCount > 0) return;
    const current = this.state.snapshot();
    // The first live sync replaces whatever was served (a restored snapshot) as a whole; later
    // publishes replace only the hostnames whose Consul names changed.
    const hosts = this.liveSynced
      ? [...this.dirtyHosts]
      : [...new Set([...this.namesByHost.keys(), ...current.services.keys()])].sort();
    this.dirtyHosts.clear();
    const services: [string, Service | undefined][] = [];
    const endpoints: [string, readonly Endpoint[] | undefined][] = [];
    for (const host of hosts) {
      const entry = this.resolveHost(host, current);
      services.push([host, entry?.service]);
      endpoints.push([host, entry?.endpoints]);
    }
    const next = this.liveSynced
      ? {
          services: LayeredMap.of(current.services).with(services),
          endpoints: LayeredMap.of(current.endpoints).with(endpoints),
        }
      : { services: definedOnly(services), endpoints: definedOnly(endpoints) };
    // Published even while some watches fail: what they last saw is kept, and the reason stays shown.
    this.state.replace(next, this.problemError(), undefined, this.liveSynced ? hosts : undefined);
    this.liveSynced = true;
    clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    this.reportStatus();
    this.settle();
  }

  /**
   * What `host` serves: of the Consul names mapping to it, in name order, the first that has a
   * service (an unanswered one keeps what is already served for it, a stored snapshot's copy);
   * the later ones are collisions.
   */
  private resolveHost(
    host: string,
    current: RegistrySnapshot,
  ): { service: Service; endpoints: readonly Endpoint[] } | undefined {
    let chosen: { service: Service; endpoints: readonly Endpoint[] } | undefined;
    const collisions: string[] = [];
    for (const name of [...(this.namesByHost.get(host) ?? [])].sort()) {
      const watch = this.watches.get(name);
      if (watch && !watch.answered) {
        const kept = current.services.get(host);
        if (kept && !chosen) chosen = { service: kept, endpoints: current.endpoints.get(host) ?? [] };
        continue;
      }
      const converted = watch?.converted;
      const service = converted?.service;
      if (!converted || !service) continue;
      if (chosen) {
        collisions.push(`${name}: ${service.hostname} is already served for another Consul service`);
        continue;
      }
      chosen = { service, endpoints: converted.endpoints };
    }
    if (collisions.length > 0) this.collisions.set(host, collisions);
    else this.collisions.delete(host);
    return chosen;
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
      this.state.replace(this.state.snapshot(), undefined, undefined, []); // same content: clears the error, emits nothing
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

function definedOnly<V>(entries: readonly [string, V | undefined][]): Map<string, V> {
  const map = new Map<string, V>();
  for (const [key, value] of entries) if (value !== undefined) map.set(key, value);
  return map;
}
