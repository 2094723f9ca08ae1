// A test-only Registry with a name of its choosing, not synced until the test publishes a snapshot.
import { StateBackedRegistry } from '../../adapters/registry-state.js';
import type { Endpoint } from '../../model/endpoint.js';
import type { Service } from '../../model/service.js';

export class StubRegistry extends StateBackedRegistry {
  constructor(readonly name: string) {
    super();
  }

  async start(): Promise<void> {}
  async stop(): Promise<void> {}

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
