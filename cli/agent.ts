// `portolan agent`: the VM side of the mesh, one long-running process per VM (agent/agent.ts does
// the work; docs/agent.md is the manual). This file is the command line: flags, their checks, the
// bootstraps it prints or writes (built by `portolan bootstrap`'s own builders), signals.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { startAgent, type AgentConfig, type RunningAgent } from '../agent/agent.js';
import { DnsModule } from '../agent/dns/dns-module.js';
import { parseUpstreams, systemUpstreams, UpstreamError, type Upstream } from '../agent/dns/upstreams.js';
import type { AgentModule } from '../agent/module.js';
import { SocketError } from '../agent/unix-socket.js';
import { ControlModule } from '../agent/workload/control-module.js';
import { RegistrationModule } from '../agent/workload/registration-module.js';
import { parseDuration } from '../ca/duration.js';
import { readCertDir } from '../ca/cert-dir.js';
import { controlPlaneAddresses } from '../ca/control-plane-addresses.js';
import { IdentityError, parseSpiffeUri, validateTrustDomain, workloadIdentity } from '../ca/identity.js';
import { tokenIdentity, TokenError } from '../ca/join-tokens.js';
import { createLogger } from '../log/logger.js';
import { DEFAULT_CERT_DIR, DEFAULT_TRUST_DOMAIN } from '../mesh/workload-certs.js';
import { buildBootstrap, validateBootstrap, type BootstrapOptions } from './bootstrap.js';
import { TOKEN_ENV } from './cert.js';
import { buildGrpcBootstrap } from './grpc-bootstrap.js';
import { OptionError, parseAddress, parseDurationMs, parsePositiveInt, type HostAndPort } from './options.js';

export const AGENT_DEFAULTS = {
  certDir: DEFAULT_CERT_DIR,
  dataDir: '/var/lib/portolan-agent',
  runDir: '/run/portolan',
  /** The usual --listen-xds address; no longer applied by default (local xDS is on the Unix socket). */
  listenXds: '127.0.0.1:15020',
  statusAddr: '127.0.0.1:15021',
  adminAddr: '127.0.0.1:15000',
  maxLocalStreams: '256',
  maxLocalStreamsPerClient: '16',
  cacheMaxNodes: '64',
  cacheMaxBytes: '64MiB',
  cacheFallback: '3s',
  drainTimeout: '20s',
  dnsAddr: '127.0.0.1:15053',
  logLevel: 'info',
} as const;

interface AgentFlags {
  caAddr: string;
  rootCert: string;
  token?: string;
  namespace: string;
  serviceAccount: string;
  trustDomain?: string;
  nodeId?: string;
  certDir: string;
  dataDir: string;
  runDir: string;
  xdsAddr?: string;
  listenXds?: string;
  xdsSocket?: string;
  sdsSocket?: string;
  statusAddr: string;
  adminAddr: string;
  ttl?: string;
  printBootstrap?: string;
  envoyBootstrap?: string;
  grpcBootstrap?: string;
  maxLocalStreams: string;
  maxLocalStreamsPerClient?: string;
  cacheMaxNodes: string;
  cacheMaxBytes: string;
  cacheFallback: string;
  drainTimeout: string;
  logLevel: string;
  group?: string;
  instanceIp?: string;
  /** false with --no-dns (commander sets true otherwise). */
  dns?: boolean;
  dnsAddr?: string;
  dnsUpstream?: string;
}

/** The flags, checked and resolved. */
export interface AgentSettings {
  readonly identity: {
    readonly trustDomain: string;
    readonly namespace: string;
    readonly serviceAccount: string;
  };
  readonly spiffeId: string;
  readonly nodeId: string;
  readonly caAddr: string;
  readonly xdsAddr: string;
  readonly rootCert: string;
  readonly token?: string;
  readonly certDir: string;
  readonly dataDir: string;
  /** Local xDS on TCP as well; absent by default (the Unix socket only, as pilot-agent). */
  readonly listenXds?: HostAndPort;
  readonly xdsSocket?: string;
  readonly sdsSocket?: string;
  readonly statusAddr: HostAndPort;
  readonly adminAddr: HostAndPort;
  readonly ttlSeconds?: number;
  readonly maxLocalStreams: number;
  readonly maxLocalStreamsPerClient: number;
  readonly cacheMaxNodes: number;
  readonly cacheMaxBytes: number;
  readonly fallbackMs: number;
  readonly drainMs: number;
  /** `--group`: the WorkloadGroup (in the agent's namespace) the VM registers into. */
  readonly group?: string;
  readonly instanceIp?: string;
  /** The DNS proxy; absent with --no-dns. Upstreams absent: /etc/resolv.conf's. */
  readonly dns?: { readonly addr: HostAndPort; readonly upstreams?: readonly Upstream[] };
}

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
    .requiredOption('--service-account <sa>', "the workload's service account (its identity)")
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
          process.stdout.write(renderBootstrap(flags.printBootstrap as 'envoy' | 'grpc', settings));
          return;
        }
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
  const config: AgentConfig = {
    certificate: {
      caAddress: settings.caAddr,
      rootCertFile: settings.rootCert,
      outDir: settings.certDir,
      identity: settings.spiffeId,
      logger,
      ...(settings.token && { token: settings.token }),
      ...(settings.ttlSeconds && { ttlSeconds: settings.ttlSeconds }),
    },
    identity: settings.identity,
    xdsAddress: settings.xdsAddr,
    ...(settings.listenXds && {
      listenXds: `${settings.listenXds.host.includes(':') ? `[${settings.listenXds.host}]` : settings.listenXds.host}:${settings.listenXds.port}`,
    }),
    ...(settings.xdsSocket && { xdsSocket: settings.xdsSocket }),
    ...(settings.sdsSocket && { sdsSocket: settings.sdsSocket }),
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
  const modules = agentModules(settings);
  let agent: RunningAgent;
  try {
    // The bootstraps are written before the command starts, with the ports actually bound.
    agent = await startAgent(config, modules.all);
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
  if (flags.envoyBootstrap) writeFileAtomically(flags.envoyBootstrap, renderBootstrap('envoy', bound));
  if (flags.grpcBootstrap) writeFileAtomically(flags.grpcBootstrap, renderBootstrap('grpc', bound));
  logger.info(
    {
      identity: settings.spiffeId,
      controlPlane: settings.xdsAddr,
      xds: agent.addresses.xds,
      sds: agent.addresses.sds,
      status: agent.addresses.status,
      ...(modules.dns && { dns: modules.dns.address }),
      ...(settings.group && { group: `${settings.identity.namespace}/${settings.group}` }),
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

export function compileAgentSettings(flags: AgentFlags, envToken: string | undefined): AgentSettings {
  const token = flags.token ?? (envToken || undefined);
  let tokenUri: string | undefined;
  try {
    tokenUri = token ? tokenIdentity(token) : undefined;
  } catch (err) {
    if (err instanceof TokenError) throw new OptionError(`--token: ${err.message}`);
    throw err;
  }
  const tokenId = tokenUri ? parseSpiffeUri(tokenUri) : undefined;
  if (tokenUri && !tokenId) throw new OptionError(`--token: it names ${tokenUri}, not a workload identity`);
  const certDir = resolve(flags.certDir);
  const held = readCertDir(certDir);
  const heldTd = held.kind === 'held' ? parseSpiffeUri(held.cert.identity)?.trustDomain : undefined;
  let spiffeId: string;
  let trustDomain: string;
  try {
    trustDomain = validateTrustDomain(
      flags.trustDomain ?? tokenId?.trustDomain ?? heldTd ?? DEFAULT_TRUST_DOMAIN,
    );
    spiffeId = workloadIdentity(trustDomain, flags.namespace, flags.serviceAccount);
  } catch (err) {
    if (err instanceof IdentityError) throw new OptionError(err.message);
    throw err;
  }
  if (tokenUri && tokenUri !== spiffeId)
    throw new OptionError(
      `the join token is for ${tokenUri}, but --namespace/--service-account/--trust-domain make ${spiffeId}`,
    );
  try {
    readFileSync(flags.rootCert);
  } catch (err) {
    throw new OptionError(`--root-cert: ${(err as Error).message}`);
  }
  const runDir = resolve(flags.runDir);
  const socket = (value: string | undefined, name: string): string | undefined =>
    value === 'off' ? undefined : resolve(value ?? join(runDir, name));
  const caAddr = addressList(flags.caAddr, '--ca-addr');
  const xdsAddr = flags.xdsAddr === undefined ? caAddr : addressList(flags.xdsAddr, '--xds-addr');
  const xdsSocket = socket(flags.xdsSocket, 'xds.sock');
  const sdsSocket = socket(flags.sdsSocket, 'sds.sock');
  const listenXds =
    flags.listenXds === undefined || flags.listenXds === 'off'
      ? undefined
      : parseAddress(flags.listenXds, '--listen-xds');
  if (!listenXds && !xdsSocket)
    throw new OptionError(
      'no local xDS: --xds-socket is off and no --listen-xds is given; local clients would have nothing to connect to',
    );
  if (flags.group !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(flags.group))
    throw new OptionError(`--group: "${flags.group}" is not a WorkloadGroup name`);
  if (flags.instanceIp !== undefined && isIP(flags.instanceIp) === 0)
    throw new OptionError(`--instance-ip: "${flags.instanceIp}" is not an IP address`);
  let upstreams: Upstream[] | undefined;
  try {
    upstreams = flags.dnsUpstream === undefined ? undefined : parseUpstreams(flags.dnsUpstream);
  } catch (err) {
    if (err instanceof UpstreamError) throw new OptionError(`--dns-upstream: ${err.message}`);
    throw err;
  }
  if (upstreams?.length === 0) throw new OptionError('--dns-upstream: name at least one resolver');
  return {
    identity: { trustDomain, namespace: flags.namespace, serviceAccount: flags.serviceAccount },
    spiffeId,
    nodeId: flags.nodeId ?? `${flags.serviceAccount}.${hostname()}`,
    caAddr,
    xdsAddr,
    rootCert: flags.rootCert,
    ...(token && { token }),
    certDir,
    dataDir: resolve(flags.dataDir),
    ...(listenXds && { listenXds }),
    ...(xdsSocket && { xdsSocket }),
    ...(sdsSocket && { sdsSocket }),
    statusAddr: parseAddress(flags.statusAddr, '--status-addr'),
    adminAddr: parseAddress(flags.adminAddr, '--admin-addr'),
    ...(flags.ttl && { ttlSeconds: Math.ceil(durationSeconds(flags.ttl, '--ttl')) }),
    maxLocalStreams: parsePositiveInt(flags.maxLocalStreams, '--max-local-streams'),
    maxLocalStreamsPerClient: parsePositiveInt(
      flags.maxLocalStreamsPerClient ?? AGENT_DEFAULTS.maxLocalStreamsPerClient,
      '--max-local-streams-per-client',
    ),
    cacheMaxNodes: parsePositiveInt(flags.cacheMaxNodes, '--cache-max-nodes'),
    cacheMaxBytes: parseBytes(flags.cacheMaxBytes, '--cache-max-bytes'),
    fallbackMs: parseDurationMs(flags.cacheFallback, '--cache-fallback'),
    drainMs: durationSeconds(flags.drainTimeout, '--drain-timeout') * 1000,
    ...(flags.group && { group: flags.group }),
    ...(flags.instanceIp && { instanceIp: flags.instanceIp }),
    ...(flags.dns === true && {
      dns: {
        addr: parseAddress(flags.dnsAddr ?? AGENT_DEFAULTS.dnsAddr, '--dns-addr'),
        ...(upstreams && { upstreams }),
      },
    }),
  };
}

/** The node id of the agent's own stream to the control plane (beside its local clients' streams). */
export function agentNodeId(settings: AgentSettings): string {
  return `agent/${settings.nodeId}`;
}

/** The modules the flags ask for: the agent's own stream, registration and probes, the DNS proxy. */
export function agentModules(settings: AgentSettings): { all: AgentModule[]; dns?: DnsModule } {
  if (!settings.group && !settings.dns) return { all: [] };
  const control = new ControlModule({
    nodeId: agentNodeId(settings),
    ...(settings.group && { group: settings.group }),
    ...(settings.instanceIp && { instanceIp: settings.instanceIp }),
  });
  const all: AgentModule[] = [control];
  if (settings.group)
    all.push(new RegistrationModule(control, settings.group, settings.instanceIp ?? '127.0.0.1'));
  let dns: DnsModule | undefined;
  if (settings.dns) {
    const { addr, upstreams } = settings.dns;
    // Never forward to ourselves (a resolv.conf pointing at the proxy).
    const self = (u: Upstream): boolean => u.host === addr.host && u.port === addr.port;
    dns = new DnsModule(control, {
      host: addr.host,
      port: addr.port,
      upstreams: upstreams ? () => upstreams : () => systemUpstreams().filter((u) => !self(u)),
    });
    all.push(dns);
  }
  return { all, ...(dns && { dns }) };
}

/** Where a bootstrap's xDS points without a TCP port (only a Unix socket): a placeholder, overridden. */
const NO_TCP: HostAndPort = { host: '127.0.0.1', port: 15020 };

/**
 * A bootstrap pointing at this agent: Envoy (ADS on the xDS socket, SDS on the SDS socket) or gRPC
 * (the TCP port with --listen-xds, else the xDS socket as `unix:PATH`).
 */
export function renderBootstrap(kind: 'envoy' | 'grpc', s: AgentSettings): string {
  const options: BootstrapOptions = {
    nodeId: s.nodeId,
    cluster: s.identity.serviceAccount,
    namespace: s.identity.namespace,
    xdsAddr: s.listenXds ?? NO_TCP,
    adminAddr: s.adminAddr,
    metadata: {
      SERVICE_ACCOUNT: s.identity.serviceAccount,
      PORTOLAN_CERT_DIR: s.certDir,
      // With the DNS proxy on, transparent capture listens on the addresses it answers (Istio's keys).
      ...(s.dns && { DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' }),
    },
    certDir: s.certDir,
    kind,
    maxConnections: 50_000,
    trustDomain: s.identity.trustDomain,
    ...(kind === 'envoy' && s.xdsSocket && { xdsPipe: s.xdsSocket }),
    ...(kind === 'envoy' && s.sdsSocket && { sdsPipe: s.sdsSocket }),
  };
  if (kind === 'grpc') {
    const bootstrap = buildGrpcBootstrap(options);
    const [server] = bootstrap.xds_servers as Record<string, unknown>[];
    // gRPC's name syntax for a Unix socket (unix:PATH, absolute here), read by every gRPC library.
    if (!s.listenXds && s.xdsSocket && server) server.server_uri = `unix:${s.xdsSocket}`;
    return `${JSON.stringify(bootstrap, null, 2)}\n`;
  }
  const bootstrap = JSON.parse(JSON.stringify(buildBootstrap(options))) as Record<string, unknown>;
  const problems = validateBootstrap(bootstrap);
  if (problems.length > 0) throw new OptionError(`bootstrap fails validation:\n  ${problems.join('\n  ')}`);
  return `${JSON.stringify(bootstrap, null, 2)}\n`;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/** HOST:PORT or a comma-separated list of them (replicas, tried in turn), each checked. */
function addressList(text: string, flag: string): string {
  const entries = controlPlaneAddresses(text);
  if (entries.length === 0) throw new OptionError(`${flag}: expected HOST:PORT, got "${text}"`);
  for (const entry of entries) parseAddress(entry, flag);
  return entries.join(',');
}

function durationSeconds(text: string, flag: string): number {
  try {
    return parseDuration(text, flag) / 1000;
  } catch (err) {
    throw new OptionError((err as Error).message);
  }
}

const UNITS: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

function parseBytes(text: string, flag: string): number {
  const m = /^(\d+)(KiB|MiB|GiB)?$/.exec(text.trim());
  const bytes = m ? Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1) : 0;
  if (!m || bytes < 1)
    throw new OptionError(`${flag}: expected a size like 65536, 512KiB or 64MiB, got "${text}"`);
  return bytes;
}

function writeFileAtomically(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, path);
}
