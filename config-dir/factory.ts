// `--registries config`: the watched directory of Istio-style YAML/JSON config. Its main flag,
// `--config-dir`, is declared with serve's own flags (cli/main.ts), where --help lists it; like any
// registry flag it reaches the factory in `flags`. The store's history lets a file broken at start
// fall back to its last accepted version.
import { statSync } from 'node:fs';
import type { Command } from 'commander';
import { OptionError, parseDurationMs } from '../adapters/option-values.js';
import type { RegistryFactory } from '../adapters/registry-factory.js';
import { ConfigDirRegistry, DEFAULT_DEBOUNCE_MS } from './registry.js';
import { REGISTRY_NAME } from './conversion.js';

export const configDirFactory: RegistryFactory<ConfigDirRegistry> = {
  name: REGISTRY_NAME,
  logComponent: 'config-dir',
  addFlags(command: Command): void {
    command.option(
      '--config-debounce <duration>',
      'config: a file is read once its events have been quiet this long (at most twice this after the first)',
      `${DEFAULT_DEBOUNCE_MS}ms`,
    );
  },
  create({ flags, logger, configHistory, acceptedFiles }) {
    const dir = flags.configDir;
    if (typeof dir !== 'string' || dir === '')
      throw new OptionError(`--config-dir: expected a directory, got ${JSON.stringify(dir)}`);
    checkDirectory(dir);
    const debounce =
      typeof flags.configDebounce === 'string' ? flags.configDebounce : `${DEFAULT_DEBOUNCE_MS}ms`;
    return new ConfigDirRegistry({
      dir,
      logger,
      debounceMs: parseDurationMs(debounce, '--config-debounce'),
      ...(configHistory && { history: configHistory }),
      ...(acceptedFiles && { accepted: acceptedFiles }),
    });
  },
};

// A missing directory is a mistake in the command line, said in one line before anything starts.
function checkDirectory(dir: string): void {
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT')
      throw new OptionError(
        `--config-dir ${dir} does not exist (create it, or point --config-dir at your config directory)`,
      );
    throw new OptionError(`--config-dir ${dir}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!isDir) throw new OptionError(`--config-dir ${dir} is not a directory`);
}
