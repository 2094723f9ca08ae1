// How a registry plugs into `portolan serve`: it may declare its own flags, and builds itself from
// them. Every registry `--registries` can name has one (adapters/<name>/factory.ts,
// config-dir/factory.ts); cli/registries.ts lists them in merge order, and serve builds through them.
import type { Command } from 'commander';
import type { AcceptedFiles } from '../model/accepted-files.js';
import type { ConfigHistory } from '../model/config-history.js';
import type { Registry } from '../model/registry.js';
import type { Logger } from '../log/logger.js';

export interface RegistryContext {
  /** Every `portolan serve` flag, as commander parsed it (camelCase keys). */
  readonly flags: Readonly<Record<string, unknown>>;
  readonly dataDir: string;
  /** Already bound to the registry's log component. */
  readonly logger: Logger;
  /** The store's config history, for a registry that keeps accepted files across restarts. */
  readonly configHistory?: ConfigHistory;
  /** What each accepted config file loaded to, for a restart without parsing the unchanged ones. */
  readonly acceptedFiles?: AcceptedFiles;
}

export interface RegistryFactory<R extends Registry = Registry> {
  /** The name in `--registries`, and the `name` of every registry it builds. */
  readonly name: string;
  /** The `component` of the registry's log lines, when not its name. */
  readonly logComponent?: string;
  /** Adds this registry's flags to the `serve` command. */
  addFlags(command: Command): void;
  /**
   * Validates its flags (throwing OptionError) and builds the registry. May be async so that a
   * heavy client library is imported only when its registry is used.
   */
  create(ctx: RegistryContext): R | Promise<R>;
}

/** The registry `factory` built, among `registries` (found by name: a factory's registries carry its name). */
export function builtBy<R extends Registry>(
  factory: RegistryFactory<R>,
  registries: readonly Registry[],
): R | undefined {
  return registries.find((r): r is R => r.name === factory.name);
}
