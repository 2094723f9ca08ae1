// `portolan agent`, assembled: one or more workloads (workload.ts: each its certificate, kept
// renewed on disk by ca/workload-agent.ts, its connection to the control plane's secure port with it,
// its local xDS proxy that keeps serving from its node cache through outages, its SDS socket), the
// status port, the optional supervised command, and any extra modules (module.ts). Everything local
// is bound before the command starts, so an Envoy started by the agent finds its sockets.
import { join } from 'node:path';
import type { Logger } from '../log/logger.js';
import type { BackoffOptions } from '../model/backoff.js';
import type { KeeperOptions } from '../ca/workload-agent.js';
import type { AgentContext, AgentModule } from './module.js';
import { configDump } from './status/config-dump.js';
import { AgentMetrics } from './status/metrics.js';
import { StatusServer, type Readiness } from './status/status-server.js';
import { WorkloadRoutes } from './status/workload-routes.js';
import { Supervisor } from './supervisor.js';
import { bindRestricted } from './unix-socket.js';
import { Workload, type WorkloadConfig } from './workload.js';
import type { AgentIdentity } from './xds/messages.js';

export type { WorkloadConfig } from './workload.js';

export interface AgentConfig {
  /** The single-identity form: how the certificate is obtained and kept (for `identity`). */
  readonly certificate?: KeeperOptions;
  readonly identity?: AgentIdentity;
  /** Several workloads (`--workload`), each its own identity and sockets; replaces the single form. */
  readonly workloads?: readonly WorkloadConfig[];
  /** The control plane's secure port, HOST:PORT. */
  readonly xdsAddress: string;
  /** The plaintext local xDS port, HOST:PORT; none when absent (the Unix socket alone, the default). */
  readonly listenXds?: string;
  readonly xdsSocket?: string;
  readonly sdsSocket?: string;
  readonly statusAddr: { readonly host: string; readonly port: number };
  /** The node cache lives in DATA_DIR/xds-cache (a named workload's in DATA_DIR/NAME/xds-cache). */
  readonly dataDir: string;
  /** Per workload. */
  readonly cache: { readonly maxNodes: number; readonly maxBytes: number };
  /** Local streams at once, per workload. */
  readonly maxLocalStreams: number;
  /** Local streams one client (one connection to the agent) may hold (default 16). */
  readonly maxLocalStreamsPerClient?: number;
  /** A subscription the control plane has not answered within this is served from the cache. */
  readonly fallbackMs: number;
  readonly upstreamBackoff?: BackoffOptions;
  /** The command after `--`. */
  readonly command?: { readonly command: string; readonly args: readonly string[]; readonly drainMs: number };
  readonly logger: Logger;
}

export interface RunningAgent {
  /** The first workload's context (the only one's in the single form). */
  readonly context: AgentContext;
  readonly workloads: readonly Workload[];
  /** Where it serves: the first workload's local xDS addresses and SDS socket, the status port. */
  readonly addresses: { readonly xds: readonly string[]; readonly sds?: string; readonly status: string };
  readonly supervisor?: Supervisor;
  readiness(): Readiness;
  stop(): Promise<void>;
}

/** The workloads of a config: its `workloads`, or the single form as one unnamed workload. */
function workloadConfigs(config: AgentConfig): readonly WorkloadConfig[] {
  if (config.workloads && config.workloads.length > 0) return config.workloads;
  if (!config.certificate || !config.identity)
    throw new Error('an agent needs a certificate and an identity, or workloads');
  return [
    {
      certificate: config.certificate,
      identity: config.identity,
      cacheDir: join(config.dataDir, 'xds-cache'),
      ...(config.listenXds && { listenXds: config.listenXds }),
      ...(config.xdsSocket && { xdsSocket: config.xdsSocket }),
      ...(config.sdsSocket && { sdsSocket: config.sdsSocket }),
    },
  ];
}

/**
 * Starts the agent. `modules` are agent-wide (the DNS proxy; in the single form every module): they
 * get the first workload's context. Each workload's own modules come in its WorkloadConfig.
 */
export async function startAgent(
  config: AgentConfig,
  modules: readonly AgentModule[] = [],
): Promise<RunningAgent> {
  const { logger } = config;
  const workloads: Workload[] = [];
  const every = <T>(read: (w: Workload) => T): T[] => workloads.map(read);
  const sum = (ns: number[]): number => ns.reduce((a, b) => a + b, 0);
  // Across workloads; /debug/workloads has each.
  const metrics = new AgentMetrics({
    upstreamConnected: () => workloads.length > 0 && every((w) => w.upstream.connected()).every(Boolean),
    upstreamReconnects: () => sum(every((w) => w.upstream.reconnects)),
    localStreams: (api) => sum(every((w) => w.xds.count(api))),
    sdsStreams: () => sum(every((w) => w.sds?.streamCount ?? 0)),
    certificateNotAfter: () => {
      const all = every((w) => w.certificates.current()?.notAfter);
      if (all.some((d) => d === undefined)) return undefined;
      return all.reduce<Date | undefined>((min, d) => (!min || (d && d < min) ? d : min), undefined);
    },
    cacheUpdatedAt: () => {
      const all = every((w) => w.cache.newestUpdate()).filter((t): t is number => t !== undefined);
      return all.length > 0 ? Math.max(...all) : undefined;
    },
    cacheNodes: () => sum(every((w) => w.cache.list().length)),
    cacheBytes: () => sum(every((w) => w.cache.bytes)),
  });
  const shared = {
    xdsAddress: config.xdsAddress,
    cache: config.cache,
    maxLocalStreams: config.maxLocalStreams,
    ...(config.maxLocalStreamsPerClient && { maxLocalStreamsPerClient: config.maxLocalStreamsPerClient }),
    fallbackMs: config.fallbackMs,
    ...(config.upstreamBackoff && { upstreamBackoff: config.upstreamBackoff }),
    metrics,
    dataDir: config.dataDir,
    logger,
  };
  for (const w of workloadConfigs(config)) workloads.push(new Workload(w, shared));
  const first = workloads[0] as Workload;

  const status = new StatusServer({
    host: config.statusAddr.host,
    port: config.statusAddr.port,
    logger,
    readiness: () => readiness(),
    metrics: async () => ({ type: metrics.registry.contentType, body: await metrics.registry.metrics() }),
    configDump: (proxyId) => dumpOf(workloads, proxyId),
  });
  status.addRoute('/debug/workloads', () =>
    Promise.resolve({
      status: 200,
      type: 'application/json',
      body: `${JSON.stringify(
        workloads.map((w) => ({ ...w.status(), ready: w.readiness().ready })),
        null,
        2,
      )}
`,
    }),
  );
  const routes = new WorkloadRoutes(status);
  const context = first.context(status);

  const readiness = (): Readiness => {
    const lines: string[] = [];
    let ready = true;
    for (const w of workloads) {
      const r = w.readiness();
      ready &&= r.ready;
      for (const line of r.lines) lines.push(w.name ? `${w.name}: ${line}` : line);
    }
    for (const m of modules) {
      const why = m.notReady?.();
      if (why) {
        ready = false;
        lines.push(`${m.name}: ${why}`);
      }
    }
    return { ready, lines };
  };

  const started: AgentModule[] = [];
  let supervisor: Supervisor | undefined;
  const stop = async (): Promise<void> => {
    await supervisor?.stop();
    for (const m of [...started].reverse())
      await m.stop().catch((err: unknown) => logger.error({ err }, `${m.name}: stop failed`));
    for (const w of workloads) await w.stop();
    await status.stop();
  };

  // Before anything is bound: a socket path another agent serves on is refused, and left alone.
  for (const w of workloads) await w.prepare();
  try {
    // The sockets first, before anything else of the agent runs: they are bound under a umask that
    // gives them their mode at birth (unix-socket.ts), which must not touch other files.
    await bindRestricted(async () => {
      for (const w of workloads) await w.bind();
    });
    for (const w of workloads) w.restrict();
    await status.start();
    for (const w of workloads) {
      await w.run(w.context(routes.forWorkload(w.name)));
    }
    for (const m of modules) {
      await m.start(context);
      started.push(m);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  if (config.command) {
    supervisor = new Supervisor({
      ...config.command,
      logger,
      onRestart: () => metrics.childRestarts.inc(),
    });
    supervisor.start();
  }
  return {
    context,
    workloads,
    addresses: {
      xds: first.xds.addresses,
      ...(first.sds && { sds: first.sds.address }),
      status: status.address,
    },
    ...(supervisor && { supervisor }),
    readiness,
    stop,
  };
}

/**
 * GET /debug/config_dump: the single workload's dump as it always was; with several, each under its
 * name (`proxyID` looked up in each, the first that has it answers).
 */
function dumpOf(
  workloads: readonly Workload[],
  proxyId: string | undefined,
): { status: number; body: unknown } {
  const [only] = workloads;
  if (workloads.length === 1 && only && only.name === undefined)
    return configDump(only.cache, only.xds.list(), proxyId);
  if (proxyId === undefined)
    return {
      status: 200,
      body: {
        workloads: Object.fromEntries(
          workloads.map((w) => [w.name ?? '', configDump(w.cache, w.xds.list(), undefined).body]),
        ),
      },
    };
  let last: { status: number; body: unknown } = { status: 404, body: { error: `no node ${proxyId}` } };
  for (const w of workloads) {
    const dump = configDump(w.cache, w.xds.list(), proxyId);
    if (dump.status === 200) return { status: 200, body: { workload: w.name, ...(dump.body as object) } };
    last = dump;
  }
  return last;
}
