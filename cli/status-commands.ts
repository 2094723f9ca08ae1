// The commands that read what a server or its store holds: `history`, `proxy-status` and
// `proxy-config`. Their work is loaded when they run, so defining them costs only their flags.
import { Argument, Option, type Command } from 'commander';
import { OptionError, parsePositiveInt } from '../adapters/option-values.js';
import { StoreError } from '../store/store.js';
import { AdminError } from './admin-client.js';
import { cliErrors } from './cli-errors.js';
import { CONFIG_KINDS, type ConfigFormat, type ConfigKind } from './proxy-config-kinds.js';
import { SERVE_DEFAULTS } from './serve-defaults.js';
import { STORE_FLAG_HELP, storeUrl } from './store-flags.js';

/** Adds `history` to the program. */
export function addHistoryCommand(program: Command): void {
  program
    .command('history')
    .description('Print recent config changes, registry sync events and proxy connections from the store.')
    .option('--data-dir <dir>', 'the data directory of the Portolan to read', SERVE_DEFAULTS.dataDir)
    .option('--limit <n>', 'how many entries of each kind', '50')
    .option('--json', 'print JSON instead of tables')
    .option('--store <url>', `${STORE_FLAG_HELP} (the history of every replica)`)
    .action(
      async (opts: { dataDir: string; limit: string; json?: boolean; store?: string }, cmd: Command) => {
        try {
          const { printHistory } = await import('./history.js');
          await printHistory(
            opts.dataDir,
            parsePositiveInt(opts.limit, '--limit'),
            opts.json ?? false,
            storeUrl(opts.store),
          );
        } catch (err) {
          if (err instanceof OptionError || err instanceof StoreError)
            cmd.error(`error: ${err.message}`, { exitCode: 2 });
          throw err;
        }
      },
    );
}

/** Adds `proxy-status` to the program. */
export function addProxyStatusCommand(program: Command): void {
  program
    .command('proxy-status')
    .description(
      'Is every proxy in sync? One line per connected proxy: kind, SotW or delta, per type SYNCED, NOT SENT, STALE (sent, not yet ACKed, for how long) or NACK, connected since. With an id, that proxy in detail with every NACK. Exits 1 when a proxy is NACKing.',
    )
    .argument('[proxy-id]', 'one proxy (its node id)')
    .option('--http-addr <host:port>', 'the admin address portolan serve listens on', SERVE_DEFAULTS.httpAddr)
    .addOption(
      new Option('-o, --output <format>', 'output format').choices(['table', 'json']).default('table'),
    )
    .action(
      (proxyId: string | undefined, opts: { httpAddr: string; output: 'table' | 'json' }, cmd: Command) =>
        cliErrors(cmd, () =>
          unreachableIsTwo(async () => {
            const { proxyStatus } = await import('./proxy-status.js');
            const result = await proxyStatus(opts.httpAddr, proxyId, opts.output);
            process.stdout.write(result.output);
            process.exitCode = result.exitCode;
          }),
        ),
    );
}

/** Adds `proxy-config` to the program. */
export function addProxyConfigCommand(program: Command): void {
  program
    .command('proxy-config')
    .description(
      'What one proxy was sent: tables of clusters, listeners, routes, endpoints (or all), or the full resources.',
    )
    .addArgument(new Argument('<kind>', 'what to show').choices(CONFIG_KINDS))
    .argument('<proxy-id>', 'the proxy (its node id)')
    .option('--http-addr <host:port>', 'the admin address portolan serve listens on', SERVE_DEFAULTS.httpAddr)
    .addOption(
      new Option('-o, --output <format>', 'table, or the full resources as json or yaml')
        .choices(['table', 'json', 'yaml'])
        .default('table'),
    )
    .action(
      (kind: ConfigKind, proxyId: string, opts: { httpAddr: string; output: ConfigFormat }, cmd: Command) =>
        cliErrors(cmd, () =>
          unreachableIsTwo(async () => {
            const { proxyConfig } = await import('./proxy-config.js');
            process.stdout.write(await proxyConfig(opts.httpAddr, kind, proxyId, opts.output));
          }),
        ),
    );
}

/** A server that cannot be reached or answers with an error: one line and exit code 2. */
async function unreachableIsTwo(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (!(err instanceof AdminError)) throw err;
    process.stderr.write(`error: ${err.message}\n`);
    process.exitCode = 2;
  }
}
