// A test-only Registry with a name of its choosing, not synced until the test publishes a snapshot.
import type { Registry, RegistryStatus } from '../../adapters/registry.js';
import { RegistryState } from '../../adapters/registry-state.js';
import type { ChangeEvent, RegistrySnapshot } from '../../model/change.js';
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';

export class StubRegistry implements Registry {
  private readonly state = new RegistryState();

  constructor(readonly name: string) {}

  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  hasSynced(): boolean {
    return this.state.hasSynced();
  }

  snapshot(): RegistrySnapshot {
    return this.state.snapshot();
  }

  status(): RegistryStatus {
    return this.state.status();
  }

  onChange(listener: (event: ChangeEvent) => void): () => void {
    return this.state.onChange(listener);
  }

  /** Publishes a whole snapshot; services get `registry` set to this registry's name. */
  publish(
    services: readonly Omit<Service, 'registry'>[],
    endpoints: Record<string, readonly Endpoint[]> = {},
  ): void {
    this.state.replace({
      services: new Map(services.map((s) => [s.hostname, { ...s, registry: this.name }])),
      endpoints: new Map(Object.entries(endpoints)),
    });
  }
}
