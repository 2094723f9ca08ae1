// `portolan agent`: the VM side of the mesh, one long-running process per VM (agent/agent.ts does
// the work; docs/agent.md is the manual). This file is the command line: the flags and the run;
// their checks are in agent-settings.ts and agent-workloads.ts (one workload, or several with
// --workload), the bootstraps in agent-bootstrap.ts, the modules in agent-modules.ts.
import { isIP } from 'node:net';
import { Option, type Command } from 'commander';
import { startAgent, type AgentConfig, type RunningAgent, type WorkloadConfig } from '../agent/agent.js';
import type { AgentModule } from '../agent/module.js';
import { SocketError } from '../agent/unix-socket.js';
import { createLogger, type Logger } from '../log/logger.js';
import { DEFAULT_TRUST_DOMAIN } from '../mesh/workload-certs.js';
import { printedWorkload, renderBootstrap, writeBootstraps } from './agent-bootstrap.js';
import { agentModules, workloadModules } from './agent-modules.js';
import {
  AGENT_DEFAULTS,
  compileAgentSettings,
  type AgentFlags,
  type AgentSettings,
  type WorkloadSettings,
} from './agent-settings.js';
import { collectWorkload } from './agent-workloads.js';
import { TOKEN_ENV } from './cert.js';
import { OptionError, parseAddress } from '../adapters/option-values.js';

export { AGENT_DEFAULTS, compileAgentSettings, type AgentSettings, type WorkloadSettings };
export { renderBootstrap } from './agent-bootstrap.js';
export { agentModules, agentNodeId } from './agent-modules.js';

export function addAgentCommand(program: Command): void {
  program
    .command('agent')
    .description(
      'Run the VM side of the mesh: enroll and renew the workload certificate, proxy local xDS clients to the control plane over mTLS (serving them from a cache through outages), serve SDS on a Unix socket, and optionally supervise a command given after --.',
    )
    .argument('[command...]', 'a command to run and supervise (after --), e.g. -- envoy -c envoy.json')
    .requiredOption(
      '--ca-addr <host:port>',
      "the control plane's secure port (serve's --secure-xds-addr); replicas: a DNS name with one record each, or HOST:PORT,HOST:PORT,… tried in turn",
    )
    .requiredOption('--root-cert <file>', 'trust bundle for first contact, from `portolan ca root`')
    .option('--token <token>', `join token for the first certificate (or set ${TOKEN_ENV})`)
    .requiredOption('--namespace <ns>', "the workload's namespace (its identity)")
    .option('--service-account <sa>', "the workload's service account (its identity); or --workload")
    .option(
      '--workload <spec>',
      'a workload of its own identity, sockets and registration, repeatable instead of --service-account/--token/--group: name=NAME,service-account=SA,token-file=FILE[,group=GROUP][,user=USER] (several in one value: separated by ";"); a bare NAME selects the one --print-bootstrap prints',
      collectWorkload,
    )
    .option(
      '--trust-domain <domain>',
      `SPIFFE trust domain (default: the token's, else ${DEFAULT_TRUST_DOMAIN})`,
    )
    .option('--node-id <id>', 'node id in the bootstraps the agent prints or writes (default: SA.HOSTNAME)')
    .option(
      '--cert-dir <dir>',
      'where the certificate files are kept (as `portolan cert --out`)',
      AGENT_DEFAULTS.certDir,
    )
    .option(
      '--data-dir <dir>',
      "the agent's state: the xDS cache kept through restarts",
      AGENT_DEFAULTS.dataDir,
    )
    .option('--run-dir <dir>', 'where the default sockets go', AGENT_DEFAULTS.runDir)
    .option(
      '--xds-addr <host:port>',
      "the control plane's xDS address, or a comma-separated list of replicas (default: --ca-addr)",
    )
    .option(
      '--listen-xds <host:port>',
      `plaintext local xDS (ADS) on TCP as well, e.g. ${AGENT_DEFAULTS.listenXds} (default: none, the Unix socket only; any local user can connect to a TCP port)`,
    )
    .option(
      '--xds-socket <path>',
      'local xDS (ADS) for Envoy and gRPC apps on a Unix socket, for the agent\'s user and group ("off": none; default RUN_DIR/xds.sock)',
    )
    .option(
      '--sds-socket <path>',
      'SDS (secrets default, ROOTCA) on a Unix socket ("off": none; default RUN_DIR/sds.sock)',
    )
    .option(
      '--status-addr <host:port>',
      '/healthz/ready, /metrics, /debug/config_dump',
      AGENT_DEFAULTS.statusAddr,
    )
    .option(
      '--admin-addr <host:port>',
      "Envoy's admin listener in the Envoy bootstrap",
      AGENT_DEFAULTS.adminAddr,
    )
    .option('--ttl <duration>', "requested certificate lifetime (default: the CA's)")
    .addOption(
      new Option('--print-bootstrap <kind>', 'print a bootstrap pointing at this agent and exit').choices([
        'envoy',
        'grpc',
      ]),
    )
    .option('--envoy-bootstrap <file>', 'write the Envoy bootstrap there at start')
    .option('--grpc-bootstrap <file>', 'write the gRPC bootstrap (GRPC_XDS_BOOTSTRAP) there at start')
    .option('--max-local-streams <n>', 'local xDS streams at once, in all', AGENT_DEFAULTS.maxLocalStreams)
    .option(
      '--max-local-streams-per-client <n>',
      'local xDS streams one client (one connection to the agent) may hold at once',
      AGENT_DEFAULTS.maxLocalStreamsPerClient,
    )
    .option('--cache-max-nodes <n>', 'nodes kept in the xDS cache', AGENT_DEFAULTS.cacheMaxNodes)
    .option(
      '--cache-max-bytes <size>',
      'bytes of resources in the xDS cache (e.g. 64MiB)',
      AGENT_DEFAULTS.cacheMaxBytes,
    )
    .option(
      '--cache-fallback <duration>',
      'serve a subscription from the cache when the control plane has not answered it within this',
      AGENT_DEFAULTS.cacheFallback,
    )
    .option(
      '--drain-timeout <duration>',
      'how long the command may take to exit after SIGTERM',
      AGENT_DEFAULTS.drainTimeout,
    )
    .option(
      '--group <name>',
      'register this VM into the WorkloadGroup NAME (in --namespace) while the agent runs, and run its probe',
    )
    .option(
      '--instance-ip <ip>',
      'the address the VM registers with (default: the one the control plane sees)',
    )
    .option(
      '--dns-addr <host:port>',
      'the DNS proxy: mesh hostnames from the control plane, the rest forwarded (UDP and TCP)',
      AGENT_DEFAULTS.dnsAddr,
    )
    .option('--no-dns', 'no DNS proxy')
    .option(
      '--dns-upstream <host[:port],...>',
      'resolvers for names outside the mesh (default: /etc/resolv.conf)',
    )
    .addOption(
      new Option('--log-level <level>', 'log level')
        .choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
        .default(AGENT_DEFAULTS.logLevel),
    )
    .action(async (command: string[], flags: AgentFlags, cmd: Command) => {
      let settings: AgentSettings;
      try {
        settings = compileAgentSettings(flags, process.env[TOKEN_ENV]);
        if (flags.printBootstrap) {
          const kind = flags.printBootstrap as 'envoy' | 'grpc';
          process.stdout.write(renderBootstrap(kind, settings, printedWorkload(settings)));
          return;
        }
        if (settings.selected !== undefined)
          throw new OptionError(
            `--workload ${settings.selected}: a bare name selects the workload --print-bootstrap prints`,
          );
      } catch (err) {
        if (err instanceof OptionError) cmd.error(`error: ${err.message}`, { exitCode: 2 });
        throw err;
      }
      await runAgent(settings, flags, command);
    });
}

async function runAgent(
  settings: AgentSettings,
  flags: AgentFlags,
  command: readonly string[],
): Promise<void> {
  const logger = createLogger(flags.logLevel as 'info');
  const [program, ...args] = command;
  const named = settings.workloads.some((w) => w.name !== undefined);
  const single = named ? undefined : agentModules(settings);
  const multi = named ? workloadModules(settings) : undefined;
  const config: AgentConfig = {
    ...(named
      ? {
          workloads: settings.workloads.map((w, i) =>
            workloadConfig(settings, w, logger, multi?.perWorkload[i] ?? []),
          ),
        }
      : {
          certificate: workloadConfig(settings, settings, logger, []).certificate,
          identity: settings.identity,
          ...(settings.xdsSocket && { xdsSocket: settings.xdsSocket }),
          ...(settings.sdsSocket && { sdsSocket: settings.sdsSocket }),
        }),
    xdsAddress: settings.xdsAddr,
    ...(settings.listenXds && {
      listenXds: `${settings.listenXds.host.includes(':') ? `[${settings.listenXds.host}]` : settings.listenXds.host}:${settings.listenXds.port}`,
    }),
    statusAddr: settings.statusAddr,
    dataDir: settings.dataDir,
    cache: { maxNodes: settings.cacheMaxNodes, maxBytes: settings.cacheMaxBytes },
    maxLocalStreams: settings.maxLocalStreams,
    maxLocalStreamsPerClient: settings.maxLocalStreamsPerClient,
    fallbackMs: settings.fallbackMs,
    ...(program && { command: { command: program, args, drainMs: settings.drainMs } }),
    logger,
  };
  if (settings.listenXds && !isLoopback(settings.listenXds.host))
    logger.warn(
      { listenXds: `${settings.listenXds.host}:${settings.listenXds.port}` },
      "--listen-xds is not a loopback address: other hosts can read this workload's config from it (plaintext, no authentication)",
    );
  const modules: AgentModule[] = single?.all ?? multi?.agentWide ?? [];
  const dns = single?.dns ?? multi?.dns;
  let agent: RunningAgent;
  try {
    // The bootstraps are written before the command starts, with the ports actually bound.
    agent = await startAgent(config, modules);
  } catch (err) {
    if (err instanceof SocketError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exit(2);
    }
    logger.fatal({ err }, 'portolan agent failed to start');
    process.exit(1);
  }
  const tcp = agent.addresses.xds.find((a) => !a.startsWith('unix:'));
  const bound = { ...settings, ...(tcp && { listenXds: parseAddress(tcp, '--listen-xds') }) };
  if (flags.envoyBootstrap) writeBootstraps('envoy', flags.envoyBootstrap, bound);
  if (flags.grpcBootstrap) writeBootstraps('grpc', flags.grpcBootstrap, bound);
  logger.info(
    {
      identity: settings.spiffeId,
      controlPlane: settings.xdsAddr,
      xds: agent.addresses.xds,
      sds: agent.addresses.sds,
      status: agent.addresses.status,
      ...(named && {
        workloads: agent.workloads.map((w) => ({
          name: w.name,
          identity: w.config.certificate.identity,
          xds: w.xds.addresses,
          sds: w.sds?.address,
          ...(w.config.owner && { user: w.config.owner.user }),
        })),
      }),
      ...(dns && { dns: dns.address }),
      ...(settings.group && !named && { group: `${settings.identity.namespace}/${settings.group}` }),
      ...(agent.supervisor && { commandPid: agent.supervisor.pid }),
    },
    'portolan agent serving',
  );
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // A hard deadline: the command's drain, plus a little for the rest.
    setTimeout(() => {
      logger.error('shutdown did not finish in time: exiting');
      process.exit(1);
    }, settings.drainMs + 10_000).unref();
    agent.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

/** What agent/ needs of one workload's settings. */
function workloadConfig(
  s: AgentSettings,
  w: WorkloadSettings,
  logger: Logger,
  modules: readonly AgentModule[],
): WorkloadConfig {
  return {
    ...(w.name !== undefined && { name: w.name }),
    certificate: {
      caAddress: s.caAddr,
      rootCertFile: s.rootCert,
      outDir: w.certDir,
      identity: w.spiffeId,
      logger,
      ...(w.token && { token: w.token }),
      ...(s.ttlSeconds && { ttlSeconds: s.ttlSeconds }),
    },
    identity: w.identity,
    cacheDir: w.cacheDir,
    ...(w.xdsSocket && { xdsSocket: w.xdsSocket }),
    ...(w.sdsSocket && { sdsSocket: w.sdsSocket }),
    ...(w.owner && { owner: w.owner }),
    modules,
  };
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}
