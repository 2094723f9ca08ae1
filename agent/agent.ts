// `portolan agent`, assembled: the workload certificate (kept renewed on disk, ca/workload-agent.ts),
// the connection to the control plane's secure port with it, the local xDS proxy that keeps serving
// from its node cache through outages, SDS on a Unix socket, the status port, the optional
// supervised command, and any extra modules (module.ts). Everything local is bound before the
// command starts, so an Envoy started by the agent finds its sockets.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/logger.js';
import type { BackoffOptions } from '../model/backoff.js';
import { CertificateKeeper, type KeeperOptions } from '../ca/workload-agent.js';
import type { AgentContext, AgentModule } from './module.js';
import { SdsServer } from './sds/sds-server.js';
import { configDump } from './status/config-dump.js';
import { AgentMetrics } from './status/metrics.js';
import { StatusServer, type Readiness } from './status/status-server.js';
import { Supervisor } from './supervisor.js';
import { bindRestricted, prepareSocket, restrictSocket } from './unix-socket.js';
import { UpstreamConnection } from './upstream/connection.js';
import { CacheFiles } from './xds/cache-file.js';
import type { AgentIdentity } from './xds/messages.js';
import { NodeCache } from './xds/node-cache.js';
import { XdsProxy } from './xds/xds-proxy.js';

export interface AgentConfig {
  /** How the certificate is obtained and kept (its `identity` must be `identity`'s SPIFFE ID). */
  readonly certificate: KeeperOptions;
  readonly identity: AgentIdentity;
  /** The control plane's secure port, HOST:PORT. */
  readonly xdsAddress: string;
  /** The plaintext local xDS port, HOST:PORT; none when absent (the Unix socket alone, the default). */
  readonly listenXds?: string;
  readonly xdsSocket?: string;
  readonly sdsSocket?: string;
  readonly statusAddr: { readonly host: string; readonly port: number };
  /** The node cache lives in DATA_DIR/xds-cache. */
  readonly dataDir: string;
  readonly cache: { readonly maxNodes: number; readonly maxBytes: number };
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
  readonly context: AgentContext;
  /** Where it serves: the local xDS addresses, the SDS socket, the status port. */
  readonly addresses: { readonly xds: readonly string[]; readonly sds?: string; readonly status: string };
  readonly supervisor?: Supervisor;
  readiness(): Readiness;
  stop(): Promise<void>;
}

export async function startAgent(
  config: AgentConfig,
  modules: readonly AgentModule[] = [],
): Promise<RunningAgent> {
  const { logger } = config;
  const certificates = new CertificateKeeper(config.certificate);
  const held = certificates.load();
  logger.info(
    held
      ? { identity: held.identity, notAfter: held.notAfter }
      : { dir: config.certificate.outDir, token: config.certificate.token ? 'given' : 'none' },
    held ? 'using the certificate on disk' : 'no usable certificate on disk: enrolling',
  );

  const files = new CacheFiles(join(config.dataDir, 'xds-cache'), logger, {
    maxFileBytes: config.cache.maxBytes * 2,
  });
  const cache = new NodeCache(config.cache, files);
  const restored = files.load(cache);
  if (restored > 0) logger.info({ nodes: restored, bytes: cache.bytes }, 'xDS cache restored from disk');

  const upstream = new UpstreamConnection({
    address: config.xdsAddress,
    trustDomain: config.identity.trustDomain,
    identity: certificates,
    logger,
    ...(config.upstreamBackoff && { backoff: config.upstreamBackoff }),
  });

  let sds: SdsServer | undefined;
  // eslint-disable-next-line prefer-const -- assigned below; the metrics read it lazily
  let xds: XdsProxy | undefined;
  const metrics = new AgentMetrics({
    upstreamConnected: () => upstream.connected(),
    upstreamReconnects: () => upstream.reconnects,
    localStreams: (api) => xds?.count(api) ?? 0,
    sdsStreams: () => sds?.streamCount ?? 0,
    certificateNotAfter: () => certificates.current()?.notAfter,
    cacheUpdatedAt: () => cache.newestUpdate(),
    cacheNodes: () => cache.list().length,
    cacheBytes: () => cache.bytes,
  });
  certificates.onChange(() => metrics.certificates.inc({ result: 'issued' }));
  certificates.onFailure(() => metrics.certificates.inc({ result: 'failed' }));

  const sockets = [config.xdsSocket, config.sdsSocket].filter((s): s is string => s !== undefined);
  for (const s of sockets) await prepareSocket(s);
  xds = new XdsProxy({
    connection: upstream,
    cache,
    identity: config.identity,
    logger,
    // TCP first when there is one: the addresses are reported in this order.
    listen: [
      ...(config.listenXds ? [config.listenXds] : []),
      ...(config.xdsSocket ? [`unix:${config.xdsSocket}`] : []),
    ],
    maxStreams: config.maxLocalStreams,
    ...(config.maxLocalStreamsPerClient && { maxStreamsPerClient: config.maxLocalStreamsPerClient }),
    fallbackMs: config.fallbackMs,
    observer: {
      servedFromCache: (_s, typeUrl) =>
        metrics.cacheServed.inc({ type: typeUrl.slice(typeUrl.lastIndexOf('.') + 1) }),
      refused: (_s, code) => metrics.refusedStreams.inc({ code: String(code) }),
    },
  });
  if (config.sdsSocket)
    sds = new SdsServer({
      source: certificates,
      listen: `unix:${config.sdsSocket}`,
      logger,
      onPush: (n) => metrics.sdsPushes.inc(n),
    });

  const abort = new AbortController();
  const status = new StatusServer({
    host: config.statusAddr.host,
    port: config.statusAddr.port,
    logger,
    readiness: () => readiness(),
    metrics: async () => ({ type: metrics.registry.contentType, body: await metrics.registry.metrics() }),
    configDump: (proxyId) => configDump(cache, xds?.list() ?? [], proxyId),
  });
  const context: AgentContext = {
    certificates,
    identity: config.identity,
    upstream,
    xds,
    cache,
    metrics,
    status,
    dataDir: config.dataDir,
    logger,
  };

  const readiness = (): Readiness => {
    const lines: string[] = [];
    const cert = certificates.status();
    const error = cert.lastError ? `; last request failed: ${cert.lastError.message}` : '';
    const certOk = cert.state === 'valid';
    if (cert.state === 'valid')
      lines.push(
        `certificate: ${cert.identity ?? ''} valid until ${cert.notAfter?.toISOString() ?? ''}${error}`,
      );
    else if (cert.state === 'expired')
      lines.push(`certificate: expired at ${cert.notAfter?.toISOString() ?? ''}${error || '; renewing'}`);
    else lines.push(`certificate: none yet${error || ' (enrolling)'}`);
    const nodes = cache.list().length;
    const connected = upstream.connected();
    if (connected) lines.push(`control plane: connected to ${upstream.address}`);
    else {
      const why = upstream.lastError()?.message;
      lines.push(
        `control plane: ${upstream.state === 'down' ? 'unreachable' : 'connecting'} (${upstream.address})${why ? `: ${why}` : ''}`,
      );
      lines.push(
        nodes > 0
          ? `serving from the cache: ${nodes} node(s), newest config from ${new Date(cache.newestUpdate() ?? 0).toISOString()}`
          : 'cache: empty, nothing to serve local clients yet',
      );
    }
    let modulesOk = true;
    for (const m of modules) {
      const why = m.notReady?.();
      if (why) {
        modulesOk = false;
        lines.push(`${m.name}: ${why}`);
      }
    }
    return { ready: certOk && (connected || nodes > 0) && modulesOk, lines };
  };

  let keeper: Promise<void> | undefined;
  const started: AgentModule[] = [];
  let supervisor: Supervisor | undefined;
  const stop = async (): Promise<void> => {
    await supervisor?.stop();
    for (const m of [...started].reverse())
      await m.stop().catch((err: unknown) => logger.error({ err }, `${m.name}: stop failed`));
    await xds?.stop();
    await sds?.stop();
    upstream.stop();
    abort.abort();
    await keeper;
    files.stop();
    await status.stop();
    for (const s of sockets) rmSync(s, { force: true });
  };

  try {
    // The sockets first, before anything else of the agent runs: they are bound under a umask that
    // gives them their mode at birth (unix-socket.ts), which must not touch other files.
    await bindRestricted(async () => {
      await xds?.start();
      await sds?.start();
    });
    for (const s of sockets) restrictSocket(s);
    keeper = certificates.run(abort.signal);
    upstream.start();
    await status.start();
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
    addresses: {
      xds: xds.addresses,
      ...(sds && { sds: sds.address }),
      status: status.address,
    },
    ...(supervisor && { supervisor }),
    readiness,
    stop,
  };
}
