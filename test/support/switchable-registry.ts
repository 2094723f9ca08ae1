// A registry whose source can be "down" (start and syncs fail) or "up" with a given snapshot; for
// failure and warm-start tests.
import { StateBackedRegistry } from '../../adapters/registry-state.js';
import type { RegistrySnapshot } from '../../model/change.js';

export class SwitchableRegistry extends StateBackedRegistry {
  constructor(
    readonly name: string,
    private source: RegistrySnapshot | undefined,
  ) {
    super();
  }

  async start(): Promise<void> {
    this.sync();
  }

  async stop(): Promise<void> {}

  /** The source answers with `snapshot` from now on (undefined: the source is down). */
  setSource(snapshot: RegistrySnapshot | undefined): void {
    this.source = snapshot;
    this.sync();
  }

  private sync(): void {
    if (this.source) this.state.replace(this.source);
    else this.state.fail(new Error(`${this.name} source unreachable`));
  }
}
