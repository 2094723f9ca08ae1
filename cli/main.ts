#!/usr/bin/env -S node --no-memory-reducer --min-semi-space-size=8 --heap-growing-percent=100 --compact-on-every-full-gc --expose-gc
// The `portolan` command line.
import { readFileSync } from 'node:fs';
import { Argument, Command, Option } from 'commander';
import { createLogger, LOG_FORMATS, type LogFormat } from '../log/logger.js';
import { batchLogWrites } from '../log/stderr-lines.js';
import { DEFAULT_PATH_NORMALIZATION } from '../mesh/mesh-config.js';
import { StoreError } from '../store/store.js';
import { addCaCommand } from './ca.js';
import { addCaServeFlags } from './ca-options.js';
import { addAgentCommand } from './agent.js';
import { addCertCommand } from './cert.js';
import { addLimitFlags } from './limit-options.js';
import { addCertRevokeCommand } from './cert-revoke.js';
import { addBootstrapCommand } from './bootstrap.js';
import { printHistory } from './history.js';
import {
  compileServeOptions,
  OptionError,
  parsePositiveInt,
  SERVE_DEFAULTS,
  type RawServeOptions,
} from './options.js';
import { REGISTRY_FACTORIES, knownRegistries } from './registries.js';
import { startPortolan } from './serve.js';
import { startSettleCollector } from './settle-collector.js';
import { REPLICA_ID_ENV, STORE_FLAG_HELP, STORE_URL_ENV, storeUrl } from './store-options.js';
import { parseShutdownTimeout, SHUTDOWN_TIMEOUT_DEFAULT, stopWithDeadline } from './shutdown.js';
import { addTokenCommand, cliErrors } from './token.js';
import { AdminError } from './admin-client.js';
import { CONFIG_KINDS, proxyConfig, type ConfigFormat, type ConfigKind } from './proxy-config.js';
import { proxyStatus } from './proxy-status.js';
import { addDiffCommand } from './diff.js';
import { addWaitCommand } from './wait.js';
import { addEnvOptions } from './env-options.js';
import { oneLineErrors } from './usage-errors.js';
import { versionLine } from './version.js';
import { addVmCommand } from './vm-bundle.js';
import { TOKEN_ENV } from './cert.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const program = new Command()
  .name('portolan')
  .description(
    'An xDS control plane for VMs and bare metal: Envoy and proxyless gRPC, fed by Consul, ZooKeeper, Kubernetes and YAML.',
  );

const serve = program
  .command('serve')
  .description('Run the control plane: watch the registries and serve xDS (ADS) and the admin HTTP API.')
  .option(
    '--registries <list>',
    `comma-separated registries, merged in this order: ${knownRegistries().join(', ')}`,
    SERVE_DEFAULTS.registries,
  )
  .option('--config-dir <dir>', 'watched directory of Istio-style YAML/JSON config', SERVE_DEFAULTS.configDir)
  .option('--data-dir <dir>', 'directory for Portolan state (created if missing)', SERVE_DEFAULTS.dataDir)
  .option(
    '--xds-addr <host:port>',
    'plaintext ADS gRPC listen address (port 0: any free port)',
    SERVE_DEFAULTS.xdsAddr,
  )
  .option(
    '--http-addr <host:port>',
    'admin HTTP listen address (/ready, /debug/*, mock API)',
    SERVE_DEFAULTS.httpAddr,
  )
  .addOption(
    new Option('--log-level <level>', 'log level')
      .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default(SERVE_DEFAULTS.logLevel),
  )
  .addOption(
    new Option(
      '--log-format <format>',
      'log lines: json (for machines), pretty (one readable line per event, level colours), auto (pretty on a terminal)',
    )
      .choices(LOG_FORMATS)
      .default('auto'),
  )
  .option(
    '--push-window <duration>',
    'quiet period: changes are merged and pushed once none arrived for this long (a batch stays open at most twice this)',
    SERVE_DEFAULTS.pushWindow,
  )
  .option(
    '--push-max-delay <duration>',
    'no change waits longer than this for its push',
    SERVE_DEFAULTS.pushMaxDelay,
  )
  .option(
    '--push-concurrency <n>',
    'responses written and not yet drained, across all streams',
    SERVE_DEFAULTS.pushConcurrency,
  )
  .option(
    '--push-new-streams-per-second <n>',
    'new streams given their first response per second (reconnect storms)',
    SERVE_DEFAULTS.pushNewStreamsPerSecond,
  )
  .option(
    '--push-admission-max-delay <duration>',
    'admit new streams beyond --push-new-streams-per-second while the event loop lags less than this (0: never)',
    SERVE_DEFAULTS.pushAdmissionMaxDelay,
  )
  .option('--no-serve-stale', 'wait for live registry syncs instead of serving stored snapshots at start')
  .option('--reset-store', 'move an unreadable database aside and start a new one')
  .option('--history-limit <rows>', 'rows kept per history table in the store', SERVE_DEFAULTS.historyLimit)
  .option('--store <url>', STORE_FLAG_HELP)
  .option(
    '--replica-id <name>',
    `this replica's name in the shared store (default $${REPLICA_ID_ENV}, else HOST-PID)`,
  )
  .option(
    '--shutdown-timeout <duration>',
    'longest a shutdown may take; past it the process exits with code 1, naming what it waited for',
    SHUTDOWN_TIMEOUT_DEFAULT,
  )
  .option(
    '--auto-registration-grace <duration>',
    "how long a VM's auto-registered WorkloadEntry outlives its agent's connection",
    SERVE_DEFAULTS.autoRegistrationGrace,
  )
  .option(
    '--path-normalization <level>',
    "request paths normalized before Envoy routes and authorizes them (Istio's meshConfig.pathNormalization): NONE, BASE, MERGE_SLASHES or DECODE_AND_MERGE_SLASHES",
    DEFAULT_PATH_NORMALIZATION,
  );
for (const factory of REGISTRY_FACTORIES) factory.addFlags(serve);
addCaServeFlags(serve);
addLimitFlags(serve);

serve.action(async (raw: RawServeOptions, cmd: Command) => {
  let options;
  let shutdownTimeoutMs;
  try {
    options = compileServeOptions(raw);
    shutdownTimeoutMs = parseShutdownTimeout(raw.shutdownTimeout);
  } catch (err) {
    // A bad flag value: the reason, then where serve's help is (cli/usage-errors.ts).
    if (err instanceof OptionError) cmd.error(`error: ${err.message}`, { exitCode: 2 });
    throw err;
  }
  const logger = createLogger(options.logLevel, raw.logFormat as LogFormat);
  let running;
  try {
    running = await startPortolan(options, logger);
  } catch (err) {
    // A problem the user can fix (an address in use, a missing directory): one line, no help, no stack.
    if (err instanceof OptionError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exit(2);
    }
    logger.fatal({ err }, 'portolan failed to start');
    process.exit(1);
  }
  // Up and announced: routine lines (one per config edit, say) may now wait a moment to be written.
  batchLogWrites();
  // After a storm, once idle: one compacting full collection (settle-collector.ts). PORTOLAN_SETTLE_GC=0
  // turns it off: at 2,000 streams the next storm then costs less CPU per response (90 against 148
  // µs), but at 10,000 streams the heap grew to 632 MiB, a full collection landed in churn (p99 623
  // against 307 ms) and steady RSS per stream was 70 against 41 KiB (docs/operations.md, Flags).
  if (process.env.PORTOLAN_SETTLE_GC !== '0') startSettleCollector();
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    batchLogWrites(false);
    logger.info({ signal }, 'shutting down');
    stopWithDeadline(
      () => running.stop(),
      () => running.waitingFor(),
      shutdownTimeoutMs,
      logger,
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
});

program
  .command('history')
  .description('Print recent config changes, registry sync events and proxy connections from the store.')
  .option('--data-dir <dir>', 'the data directory of the Portolan to read', SERVE_DEFAULTS.dataDir)
  .option('--limit <n>', 'how many entries of each kind', '50')
  .option('--json', 'print JSON instead of tables')
  .option('--store <url>', `${STORE_FLAG_HELP} (the history of every replica)`)
  .action(async (opts: { dataDir: string; limit: string; json?: boolean; store?: string }, cmd: Command) => {
    try {
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
  });

program
  .command('proxy-status')
  .description(
    'Is every proxy in sync? One line per connected proxy: kind, SotW or delta, per type SYNCED, NOT SENT, STALE (sent, not yet ACKed, for how long) or NACK, connected since. With an id, that proxy in detail with every NACK. Exits 1 when a proxy is NACKing.',
  )
  .argument('[proxy-id]', 'one proxy (its node id)')
  .option('--http-addr <host:port>', 'the admin address portolan serve listens on', SERVE_DEFAULTS.httpAddr)
  .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'json']).default('table'))
  .action((proxyId: string | undefined, opts: { httpAddr: string; output: 'table' | 'json' }, cmd: Command) =>
    cliErrors(cmd, async () => {
      try {
        const result = await proxyStatus(opts.httpAddr, proxyId, opts.output);
        process.stdout.write(result.output);
        process.exitCode = result.exitCode;
      } catch (err) {
        if (err instanceof AdminError) {
          process.stderr.write(`error: ${err.message}\n`);
          process.exitCode = 2;
          return;
        }
        throw err;
      }
    }),
  );

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
      cliErrors(cmd, async () => {
        try {
          process.stdout.write(await proxyConfig(opts.httpAddr, kind, proxyId, opts.output));
        } catch (err) {
          if (err instanceof AdminError) {
            process.stderr.write(`error: ${err.message}\n`);
            process.exitCode = 2;
            return;
          }
          throw err;
        }
      }),
  );

addDiffCommand(program);
addBootstrapCommand(program);
addWaitCommand(program);

program
  .command('version')
  .description('Print the Portolan version and its runtime (the Node.js it runs on).')
  .action(() => {
    process.stdout.write(`${versionLine(pkg.version)}\n`);
  });

addTokenCommand(program);
addCaCommand(program);
addCertCommand(program);
addCertRevokeCommand(program);
addAgentCommand(program);
addVmCommand(program);

// Every serve and agent flag is also a PORTOLAN_* variable (an EnvironmentFile is the whole config).
addEnvOptions(serve, { aliases: { '--store': STORE_URL_ENV } });
const agent = program.commands.find((c) => c.name() === 'agent');
if (agent) addEnvOptions(agent, { aliases: { '--token': TOKEN_ENV } });
oneLineErrors(program);

await program.parseAsync(process.argv);
