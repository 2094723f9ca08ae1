// An in-memory registry, mutable through the admin HTTP API (or directly in tests), like Pilot's debug
// memory registry. It publishes while running, as a registry over a source would: start() publishes
// what was put before it (that is its first sync), each mutation then publishes a new snapshot, and
// after stop() mutations are kept but no longer announced.
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';
import type { RegistrySnapshot } from '../../model/change.js';
import { StateBackedRegistry } from '../registry-state.js';
import { LayeredMap } from '../../model/layered-map.js';

export class MockRegistry extends StateBackedRegistry {
  readonly name = 'mock';
  private readonly services = new Map<string, Service>();
  private readonly endpoints = new Map<string, Endpoint[]>();
  private running = false;

  async start(): Promise<void> {
    this.running = true;
    this.publish();
  }

  async stop(): Promise<void> {
    this.running = false;
  }

  /**
   * The mock registry is its own source of truth: a persisted snapshot becomes its live state, and
   * is served at once (before start, as a restored snapshot is).
   */
  override restore(snapshot: RegistrySnapshot): void {
    this.services.clear();
    this.endpoints.clear();
    for (const [host, service] of snapshot.services) this.services.set(host, service);
    for (const [host, list] of snapshot.endpoints) this.endpoints.set(host, [...list]);
    this.state.replace(this.current());
  }

  /** Adds or replaces a service (its endpoints are kept). */
  putService(service: Omit<Service, 'registry'>): void {
    this.services.set(service.hostname, { ...service, registry: this.name });
    this.publish(service.hostname);
  }

  /** Removes a service and its endpoints; false if there was none. */
  deleteService(hostname: string): boolean {
    const existed = this.services.delete(hostname);
    this.endpoints.delete(hostname);
    if (existed) this.publish(hostname);
    return existed;
  }

  /** Replaces every endpoint of a service. */
  setEndpoints(hostname: string, endpoints: readonly Endpoint[]): void {
    this.endpoints.set(hostname, [...endpoints]);
    this.publish(hostname);
  }

  /** Adds an endpoint, replacing one at the same address. */
  putEndpoint(hostname: string, endpoint: Endpoint): void {
    const list = (this.endpoints.get(hostname) ?? []).filter((e) => e.address !== endpoint.address);
    list.push(endpoint);
    this.endpoints.set(hostname, list);
    this.publish(hostname);
  }

  /** Removes the endpoint at `address`; false if there was none. */
  deleteEndpoint(hostname: string, address: string): boolean {
    const list = this.endpoints.get(hostname) ?? [];
    const kept = list.filter((e) => e.address !== address);
    if (kept.length === list.length) return false;
    this.endpoints.set(hostname, kept);
    this.publish(hostname);
    return true;
  }

  // Every mutation stores a new list for its host and never changes a stored one, so snapshots can
  // share the lists: unchanged hosts keep their identity. A mutation names its host, so only that
  // host is compared (start() publishes everything: its diff walks the whole snapshot once).
  // The next snapshot is the last one with that host replaced (layered maps: nothing else copied).
  private publish(hostname?: string): void {
    if (!this.running) return;
    if (hostname === undefined) {
      this.state.replace(this.current());
      return;
    }
    const last = this.state.snapshot();
    const next: RegistrySnapshot = {
      services: LayeredMap.of(last.services).with([[hostname, this.services.get(hostname)]]),
      endpoints: LayeredMap.of(last.endpoints).with([[hostname, this.endpoints.get(hostname)]]),
    };
    this.state.replace(next, undefined, undefined, [hostname]);
  }

  private current(): RegistrySnapshot {
    return { services: new Map(this.services), endpoints: new Map(this.endpoints) };
  }
}
