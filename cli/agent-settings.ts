// `portolan agent`'s flags, checked and resolved into settings before anything starts: the agent-wide
// ones here, the workloads (the single `--service-account` form, or several `--workload`) in
// agent-workloads.ts. Every error is an OptionError: one line, exit 2 (cli/usage-errors.ts).
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { parseUpstreams, UpstreamError, type Upstream } from '../agent/dns/upstreams.js';
import type { SocketOwner } from '../agent/unix-socket.js';
import { parseDuration } from '../ca/duration.js';
import { controlPlaneAddresses } from '../ca/control-plane-addresses.js';
import { DEFAULT_CERT_DIR } from '../mesh/workload-certs.js';
import { compileWorkloads } from './agent-workloads.js';
import {
  OptionError,
  parseAddress,
  parseDurationMs,
  parsePositiveInt,
  type HostAndPort,
} from '../adapters/option-values.js';

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

export interface AgentFlags {
  caAddr: string;
  rootCert: string;
  token?: string;
  namespace: string;
  /** Required in the single form; absent with --workload. */
  serviceAccount?: string;
  /** `--workload` values as given (repeatable; `;` separates several in one value). */
  workload?: string[];
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

/** One workload's settings: its identity, its certificate directory, its sockets, its group. */
export interface WorkloadSettings {
  /** `--workload name=`; absent in the single form. */
  readonly name?: string;
  readonly identity: {
    readonly trustDomain: string;
    readonly namespace: string;
    readonly serviceAccount: string;
  };
  readonly spiffeId: string;
  readonly nodeId: string;
  readonly token?: string;
  readonly certDir: string;
  /** Where its node cache is kept. */
  readonly cacheDir: string;
  readonly xdsSocket?: string;
  readonly sdsSocket?: string;
  /** The WorkloadGroup (in the agent's namespace) it registers into. */
  readonly group?: string;
  /** `user=`: its socket directory is given to this user. */
  readonly owner?: SocketOwner;
}

/**
 * The flags, checked and resolved: the agent-wide settings, and the workloads. The workload fields
 * at the top are the first workload's (in the single form, the only one's).
 */
export interface AgentSettings extends WorkloadSettings {
  readonly workloads: readonly WorkloadSettings[];
  /** A bare `--workload NAME`: the workload --print-bootstrap prints. */
  readonly selected?: string;
  readonly caAddr: string;
  readonly xdsAddr: string;
  readonly rootCert: string;
  readonly dataDir: string;
  /** Local xDS on TCP as well; absent by default (the Unix socket only, as pilot-agent). */
  readonly listenXds?: HostAndPort;
  readonly statusAddr: HostAndPort;
  readonly adminAddr: HostAndPort;
  readonly ttlSeconds?: number;
  readonly maxLocalStreams: number;
  readonly maxLocalStreamsPerClient: number;
  readonly cacheMaxNodes: number;
  readonly cacheMaxBytes: number;
  readonly fallbackMs: number;
  readonly drainMs: number;
  readonly instanceIp?: string;
  /** The DNS proxy; absent with --no-dns. Upstreams absent: /etc/resolv.conf's. */
  readonly dns?: { readonly addr: HostAndPort; readonly upstreams?: readonly Upstream[] };
}

export function compileAgentSettings(flags: AgentFlags, envToken: string | undefined): AgentSettings {
  try {
    readFileSync(flags.rootCert);
  } catch (err) {
    throw new OptionError(`--root-cert: ${(err as Error).message}`);
  }
  const runDir = resolve(flags.runDir);
  const { workloads, selected } = compileWorkloads(flags, envToken, runDir);
  const first = workloads[0];
  if (!first) throw new OptionError('no workload: give --service-account or --workload');
  const caAddr = addressList(flags.caAddr, '--ca-addr');
  const xdsAddr = flags.xdsAddr === undefined ? caAddr : addressList(flags.xdsAddr, '--xds-addr');
  const listenXds =
    flags.listenXds === undefined || flags.listenXds === 'off'
      ? undefined
      : parseAddress(flags.listenXds, '--listen-xds');
  if (!listenXds && !first.xdsSocket)
    throw new OptionError(
      'no local xDS: --xds-socket is off and no --listen-xds is given; local clients would have nothing to connect to',
    );
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
    ...first,
    workloads,
    ...(selected && { selected }),
    caAddr,
    xdsAddr,
    rootCert: flags.rootCert,
    dataDir: resolve(flags.dataDir),
    ...(listenXds && { listenXds }),
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
    ...(flags.instanceIp && { instanceIp: flags.instanceIp }),
    ...(flags.dns === true && {
      dns: {
        addr: parseAddress(flags.dnsAddr ?? AGENT_DEFAULTS.dnsAddr, '--dns-addr'),
        ...(upstreams && { upstreams }),
      },
    }),
  };
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
