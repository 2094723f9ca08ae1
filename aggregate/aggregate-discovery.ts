// Merges the registries, in `--registries` order, into the one ServiceDiscovery downstream reads.
//
// Rule for a hostname several registries define (Istio's): the first registry in order owns the
// Service (its ports, resolution, labels); endpoints from every registry are merged. An endpoint
// from another registry is mapped onto the owner's ports by port number; one serving none of the
// owner's ports is dropped. Conflicts are listed in /debug/registryz.
import type { Registry } from '../model/registry.js';
import { buildCatalog, type Catalog, type CoLocatedEndpoint } from '../model/catalog.js';
import type { ChangeEvent } from '../model/change.js';
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

export class AggregateDiscovery implements ServiceDiscovery {
  private readonly listeners = new Listeners<ChangeEvent>();
  private readonly unsubscribes: (() => void)[] = [];
  private merged: { catalog: Catalog; conflicts: HostConflict[] } | undefined;

  constructor(readonly registries: readonly Registry[]) {
    for (const registry of registries) {
      this.unsubscribes.push(
        registry.onChange((event) => {
          this.merged = undefined;
          // Named for the push history: which registry published it (and which files, if it says).
          this.listeners.emit({
            ...event,
            trigger: { registries: [registry.name], files: event.trigger?.files ?? [] },
          });
        }),
      );
    }
  }

  /** Starts every registry at once; resolves when all have made their first attempt. */
  async start(): Promise<void> {
    await Promise.all(this.registries.map((r) => r.start()));
    this.merged = undefined;
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

  catalog(): Catalog {
    return this.merge().catalog;
  }

  conflicts(): readonly HostConflict[] {
    return this.merge().conflicts;
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

  private merge(): { catalog: Catalog; conflicts: HostConflict[] } {
    if (this.merged) return this.merged;
    const owners = new Map<string, Service>();
    const shadowed = new Map<string, string[]>();
    const endpoints = new Map<string, Endpoint[]>();
    for (const registry of this.registries) {
      const snap = registry.snapshot();
      for (const [host, service] of snap.services) {
        if (!owners.has(host)) owners.set(host, service);
        else shadowed.set(host, [...(shadowed.get(host) ?? []), registry.name]);
      }
    }
    for (const registry of this.registries) {
      const snap = registry.snapshot();
      for (const [host, list] of snap.endpoints) {
        const owner = owners.get(host);
        if (!owner) continue;
        const own = snap.services.get(host);
        const mapped = owner.registry === registry.name || !own ? list : remapEndpointPorts(list, own, owner);
        endpoints.set(host, [...(endpoints.get(host) ?? []), ...mapped]);
      }
    }
    const conflicts = [...shadowed].map(([hostname, names]) => ({
      hostname,
      owner: owners.get(hostname)?.registry ?? '',
      shadowed: names,
    }));
    this.merged = { catalog: buildCatalog(owners.values(), endpoints), conflicts };
    return this.merged;
  }
}
