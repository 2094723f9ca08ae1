// How an external-source registry (consul, zookeeper, kubernetes) plugs into `portolan serve`: it
// declares its own flags and builds itself from them. `config` and `mock` are built in (serve.ts),
// because the admin server and the push path talk to them directly.
import type { Command } from 'commander';
import type { Registry } from '../model/registry.js';
import type { Logger } from '../log/logger.js';

export interface RegistryContext {
  /** Every `portolan serve` flag, as commander parsed it (camelCase keys). */
  readonly flags: Readonly<Record<string, unknown>>;
  readonly dataDir: string;
  readonly logger: Logger;
}

export interface RegistryFactory {
  /** The name in `--registries`. */
  readonly name: string;
  /** Adds this registry's flags to the `serve` command. */
  addFlags(command: Command): void;
  /**
   * Validates its flags (throwing OptionError) and builds the registry. May be async so that a
   * heavy client library is imported only when its registry is used.
   */
  create(ctx: RegistryContext): Registry | Promise<Registry>;
}
