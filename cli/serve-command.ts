// `portolan serve`: its flags, and the action that starts the server. The server's code is loaded
// only when serve runs (cli/commands.ts), not for every other command's start.
import { Option, type Command } from 'commander';
import { createLogger, LOG_FORMATS, type LogFormat } from '../log/logger.js';
import { batchLogWrites } from '../log/stderr-lines.js';
import { DEFAULT_PATH_NORMALIZATION } from '../mesh/mesh-config.js';
import { addCaServeFlags } from './ca-options.js';
import { addLimitFlags } from './limit-options.js';
import { compileServeOptions, OptionError, SERVE_DEFAULTS, type RawServeOptions } from './options.js';
import { REGISTRY_FACTORIES, knownRegistries } from './registries.js';
import { startSettleCollector } from './settle-collector.js';
import { parseShutdownTimeout, SHUTDOWN_TIMEOUT_DEFAULT, stopWithDeadline } from './shutdown.js';
import { REPLICA_ID_ENV, STORE_FLAG_HELP } from './store-flags.js';

/** Adds `serve` to the program. */
export function addServeCommand(program: Command): void {
  const serve = program
    .command('serve')
    .description('Run the control plane: watch the registries and serve xDS (ADS) and the admin HTTP API.')
    .option(
      '--registries <list>',
      `comma-separated registries, merged in this order: ${knownRegistries().join(', ')}`,
      SERVE_DEFAULTS.registries,
    )
    .option(
      '--config-dir <dir>',
      'watched directory of Istio-style YAML/JSON config',
      SERVE_DEFAULTS.configDir,
    )
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
      const { startPortolan } = await import('./serve.js');
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
    // After a storm, once idle and while streams are connected: one compacting full collection
    // (settle-collector.ts). PORTOLAN_SETTLE_GC=0 turns it off (docs/operations.md, Flags).
    if (process.env.PORTOLAN_SETTLE_GC !== '0') {
      const { ads } = running;
      startSettleCollector({
        streams: () => ads.gauges.streams().reduce((sum, s) => sum + s.count, 0),
      });
    }
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
}
