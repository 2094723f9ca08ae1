// Merges the registries, in `--registries` order, into the one ServiceDiscovery downstream reads.
//
// Rule for a hostname several registries define (Istio's): the first registry in order owns the
// Service (its ports, resolution, labels); endpoints from every registry are merged. An endpoint
// from another registry is mapped onto the owner's ports by port number; one serving none of the
// owner's ports is dropped. Conflicts are listed in /debug/registryz.
import type { Registry } from '../model/registry.js';
import {
  buildCatalog,
  type CoLocatedEndpoint,
  type HostChange,
  type UpdatableCatalog,
} from '../model/catalog.js';
import type { Catalog } from '../model/catalog.js';
import type { ChangeEvent, RegistrySnapshot } from '../model/change.js';
import type { ServiceDiscovery } from '../model/discovery.js';
import type { Endpoint, PortEndpoint } from '../model/endpoint.js';
import { Listeners } from '../model/listeners.js';
import type { Service } from '../model/service.js';
import { remapEndpointPorts } from '../model/port-mapping.js';

export interface HostConflict {
  readonly hostname: string;
  /** The registry whose Service definition is used. */
  readonly owner: string;
  /** Registries that also define it; their endpoints are merged, their Service is not. */
  readonly shadowed: readonly string[];
}

/** Where a merge reads a registry's snapshot (the one in force, or a candidate's in its place). */
type SnapshotOf = (registry: Registry) => RegistrySnapshot;

export class AggregateDiscovery implements ServiceDiscovery {
  private readonly listeners = new Listeners<ChangeEvent>();
  private readonly unsubscribes: (() => void)[] = [];
  private catalogInForce: UpdatableCatalog | undefined;
  /** Hostnames changed since `catalogInForce` was made: only these are merged again. */
  private readonly stale = new Set<string>();
  private conflictList: HostConflict[] | undefined;

  constructor(readonly registries: readonly Registry[]) {
    for (const registry of registries) {
      this.unsubscribes.push(
        registry.onChange((event) => {
          for (const host of event.services) this.stale.add(host);
          for (const host of event.endpoints) this.stale.add(host);
          this.conflictList = undefined;
          // Named for the push history: which registry published it (and which files, if it says).
          this.listeners.emit({
            ...event,
            trigger: {
              registries: [registry.name],
              files: event.trigger?.files ?? [],
              ...(event.trigger?.debounced && { debounced: true }),
              ...(event.trigger?.generation !== undefined && { generation: event.trigger.generation }),
            },
          });
        }),
      );
    }
  }

  /** Starts every registry at once; resolves when all have made their first attempt. */
  async start(): Promise<void> {
    await Promise.all(this.registries.map((r) => r.start()));
    this.catalogInForce = undefined;
    this.conflictList = undefined;
  }

  /** Stops every registry at once; `each` may wrap a registry's stop (serve names the ones it waits for). */
  async stop(each: (registry: Registry) => Promise<void> = (r) => r.stop()): Promise<void> {
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
    await Promise.all(this.registries.map(each));
  }

  hasSynced(): boolean {
    return this.registries.every((r) => r.hasSynced());
  }

  onChange(listener: (event: ChangeEvent) => void): () => void {
    return this.listeners.add(listener);
  }

  /** Immutable: a change makes a new one, sharing what did not change with the last. */
  catalog(): Catalog {
    if (!this.catalogInForce) {
      this.stale.clear();
      this.catalogInForce = this.mergeAll();
    } else if (this.stale.size > 0) {
      const changes = new Map<string, HostChange>();
      for (const host of this.stale) changes.set(host, this.mergeHost(host));
      this.stale.clear();
      this.catalogInForce = this.catalogInForce.with(changes);
    }
    return this.catalogInForce;
  }

  conflicts(): readonly HostConflict[] {
    return (this.conflictList ??= this.findConflicts());
  }

  /** The registries whose services include `hostname`, in merge order (the first owns it). */
  registriesServing(hostname: string): readonly string[] {
    return this.registries.filter((r) => r.snapshot().services.has(hostname)).map((r) => r.name);
  }

  services(): readonly Service[] {
    return this.catalog().services();
  }

  service(hostname: string): Service | undefined {
    return this.catalog().service(hostname);
  }

  endpoints(hostname: string, port: number): readonly PortEndpoint[] {
    return this.catalog().endpoints(hostname, port);
  }

  endpointsByIp(ips: readonly string[]): readonly CoLocatedEndpoint[] {
    return this.catalog().endpointsByIp(ips);
  }

  /**
   * The catalog had registry `name`'s snapshot been `snapshot` (a candidate of the config directory,
   * `portolan diff`): every registry merged by the same rules as the catalog in force. Nothing in
   * force changes; this costs a merge of everything.
   */
  catalogWith(name: string, snapshot: RegistrySnapshot): Catalog {
    return this.mergeAll((r) => (r.name === name ? snapshot : r.snapshot()));
  }

  private mergeAll(snapshotOf: SnapshotOf = (r) => r.snapshot()): UpdatableCatalog {
    const owners = new Map<string, Service>();
    for (const registry of this.registries) {
      for (const [host, service] of snapshotOf(registry).services)
        if (!owners.has(host)) owners.set(host, service);
    }
    const endpoints = new Map<string, Endpoint[]>();
    for (const registry of this.registries) {
      const snap = snapshotOf(registry);
      for (const [host, list] of snap.endpoints) {
        const owner = owners.get(host);
        if (!owner) continue;
        const mapped = this.mapped(registry, owner, list, snapshotOf);
        const merged = endpoints.get(host);
        endpoints.set(host, merged ? [...merged, ...mapped] : [...mapped]);
      }
    }
    return buildCatalog(owners.values(), endpoints);
  }

  /** One hostname merged from every registry, by the same rule as mergeAll(). */
  private mergeHost(host: string): HostChange {
    let owner: Service | undefined;
    for (const registry of this.registries) {
      owner = registry.snapshot().services.get(host);
      if (owner) break;
    }
    if (!owner) return { service: undefined, endpoints: [] };
    const endpoints: Endpoint[] = [];
    for (const registry of this.registries) {
      const list = registry.snapshot().endpoints.get(host);
      if (list) endpoints.push(...this.mapped(registry, owner, list));
    }
    return { service: owner, endpoints };
  }

  private mapped(
    registry: Registry,
    owner: Service,
    list: readonly Endpoint[],
    snapshotOf: SnapshotOf = (r) => r.snapshot(),
  ): readonly Endpoint[] {
    const own = snapshotOf(registry).services.get(owner.hostname);
    return owner.registry === registry.name || !own ? list : remapEndpointPorts(list, own, owner);
  }

  private findConflicts(): HostConflict[] {
    const owners = new Map<string, Service>();
    const shadowed = new Map<string, string[]>();
    for (const registry of this.registries) {
      for (const [host, service] of registry.snapshot().services) {
        if (!owners.has(host)) owners.set(host, service);
        else shadowed.set(host, [...(shadowed.get(host) ?? []), registry.name]);
      }
    }
    return [...shadowed].map(([hostname, names]) => ({
      hostname,
      owner: owners.get(hostname)?.registry ?? '',
      shadowed: names,
    }));
  }
}
