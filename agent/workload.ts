// One workload of the agent, with everything that is its own: its certificate (kept renewed in its
// directory with its own join token), its connection to the control plane (mTLS with that
// certificate, so the control plane sees each workload as itself), its node cache, its local xDS
// and SDS servers (a socket is an identity: every node on them is this workload), and its modules
// (its control stream, its registration and probe). agent.ts runs one per `--workload`; the single
// `--service-account` form is one unnamed workload with the agent's historical paths.
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../log/logger.js';
import type { BackoffOptions } from '../model/backoff.js';
import { CertificateKeeper, type KeeperOptions } from '../ca/workload-agent.js';
import type { AgentContext, AgentModule, RouteTable } from './module.js';
import { SdsServer } from './sds/sds-server.js';
import type { AgentMetrics } from './status/metrics.js';
import {
  checkSocketDir,
  giveToOwner,
  ownedSocketProblem,
  prepareSocket,
  restrictSocket,
  type SocketOwner,
} from './unix-socket.js';
import { UpstreamConnection } from './upstream/connection.js';
import { CacheFiles } from './xds/cache-file.js';
import type { AgentIdentity } from './xds/messages.js';
import { NodeCache } from './xds/node-cache.js';
import { XdsProxy } from './xds/xds-proxy.js';

export interface WorkloadConfig {
  /** `--workload name=NAME`; absent for the single-identity form. */
  readonly name?: string;
  /** How its certificate is obtained and kept (`identity` must be `identity`'s SPIFFE ID). */
  readonly certificate: KeeperOptions;
  readonly identity: AgentIdentity;
  /** Plaintext local xDS on TCP (the single form only). */
  readonly listenXds?: string;
  readonly xdsSocket?: string;
  readonly sdsSocket?: string;
  /** Where its node cache is kept through restarts. */
  readonly cacheDir: string;
  /** `user=`: its socket directory and sockets are given to this Unix user. */
  readonly owner?: SocketOwner;
  /** Its own modules (control stream, registration), started with its context. */
  readonly modules?: readonly AgentModule[];
}

/** What every workload is given by the agent. */
export interface WorkloadShared {
  readonly xdsAddress: string;
  readonly cache: { readonly maxNodes: number; readonly maxBytes: number };
  readonly maxLocalStreams: number;
  readonly maxLocalStreamsPerClient?: number;
  readonly fallbackMs: number;
  readonly upstreamBackoff?: BackoffOptions;
  readonly metrics: AgentMetrics;
  readonly dataDir: string;
  readonly logger: Logger;
}

/** One readiness verdict with its lines. */
export interface WorkloadReadiness {
  readonly ready: boolean;
  readonly lines: readonly string[];
}

export class Workload {
  readonly certificates: CertificateKeeper;
  readonly cache: NodeCache;
  readonly upstream: UpstreamConnection;
  readonly xds: XdsProxy;
  readonly sds: SdsServer | undefined;
  readonly logger: Logger;
  private readonly files: CacheFiles;
  private readonly started: AgentModule[] = [];
  private keeper: Promise<void> | undefined;
  private readonly abort = new AbortController();

  constructor(
    readonly config: WorkloadConfig,
    private readonly shared: WorkloadShared,
  ) {
    const { metrics } = shared;
    this.logger = config.name ? shared.logger.child({ workload: config.name }) : shared.logger;
    const logger = this.logger;
    this.certificates = new CertificateKeeper({ ...config.certificate, logger });
    const held = this.certificates.load();
    logger.info(
      held
        ? { identity: held.identity, notAfter: held.notAfter }
        : { dir: config.certificate.outDir, token: config.certificate.token ? 'given' : 'none' },
      held ? 'using the certificate on disk' : 'no usable certificate on disk: enrolling',
    );
    this.certificates.onChange(() => metrics.certificates.inc({ result: 'issued' }));
    this.certificates.onFailure(() => metrics.certificates.inc({ result: 'failed' }));

    this.files = new CacheFiles(config.cacheDir, logger, { maxFileBytes: shared.cache.maxBytes * 2 });
    this.cache = new NodeCache(shared.cache, this.files);
    const restored = this.files.load(this.cache);
    if (restored > 0)
      logger.info({ nodes: restored, bytes: this.cache.bytes }, 'xDS cache restored from disk');

    this.upstream = new UpstreamConnection({
      address: shared.xdsAddress,
      trustDomain: config.identity.trustDomain,
      identity: this.certificates,
      logger,
      ...(shared.upstreamBackoff && { backoff: shared.upstreamBackoff }),
    });
    const owner = config.owner;
    const xdsSocket = config.xdsSocket;
    this.xds = new XdsProxy({
      connection: this.upstream,
      cache: this.cache,
      identity: config.identity,
      logger,
      // TCP first when there is one: the addresses are reported in this order.
      listen: [...(config.listenXds ? [config.listenXds] : []), ...(xdsSocket ? [`unix:${xdsSocket}`] : [])],
      maxStreams: shared.maxLocalStreams,
      ...(shared.maxLocalStreamsPerClient && { maxStreamsPerClient: shared.maxLocalStreamsPerClient }),
      fallbackMs: shared.fallbackMs,
      ...(owner && xdsSocket && { admit: () => ownedSocketProblem(dirname(xdsSocket), xdsSocket, owner) }),
      observer: {
        servedFromCache: (_s, typeUrl) =>
          metrics.cacheServed.inc({ type: typeUrl.slice(typeUrl.lastIndexOf('.') + 1) }),
        refused: (_s, code) => metrics.refusedStreams.inc({ code: String(code) }),
      },
    });
    const sdsSocket = config.sdsSocket;
    this.sds =
      sdsSocket === undefined
        ? undefined
        : new SdsServer({
            source: this.certificates,
            listen: `unix:${sdsSocket}`,
            logger,
            onPush: (n) => metrics.sdsPushes.inc(n),
            ...(owner && { admit: () => ownedSocketProblem(dirname(sdsSocket), sdsSocket, owner) }),
          });
  }

  get name(): string | undefined {
    return this.config.name;
  }

  get sockets(): string[] {
    return [this.config.xdsSocket, this.config.sdsSocket].filter((s): s is string => s !== undefined);
  }

  /** Readies the socket paths (before the agent's restricted bind). */
  async prepare(): Promise<void> {
    const owner = this.config.owner;
    for (const s of this.sockets) {
      await prepareSocket(s, owner);
      // A named workload's directory sits in the run dir: that one must be the agent's own too.
      if (this.config.name) checkSocketDir(dirname(dirname(s)));
    }
  }

  /** Binds its local servers; call inside `bindRestricted` (unix-socket.ts). */
  async bind(): Promise<void> {
    await this.xds.start();
    await this.sds?.start();
  }

  /** After the bind: the sockets' modes, and with `user=`, their owner. */
  restrict(): void {
    for (const s of this.sockets) restrictSocket(s);
    const owner = this.config.owner;
    if (!owner) return;
    const dirs = new Set(this.sockets.map((s) => dirname(s)));
    for (const dir of dirs)
      giveToOwner(
        dir,
        this.sockets.filter((s) => dirname(s) === dir),
        owner,
      );
  }

  /** Starts renewing its certificate, its upstream connection and its modules. */
  async run(context: AgentContext): Promise<void> {
    this.keeper = this.certificates.run(this.abort.signal);
    this.upstream.start();
    for (const m of this.config.modules ?? []) {
      await m.start(context);
      this.started.push(m);
    }
  }

  /** Its share of the agent's context, for its modules (and the agent-wide ones on the first). */
  context(routes: RouteTable): AgentContext {
    return {
      certificates: this.certificates,
      identity: this.config.identity,
      upstream: this.upstream,
      xds: this.xds,
      cache: this.cache,
      metrics: this.shared.metrics,
      status: routes,
      dataDir: this.shared.dataDir,
      logger: this.logger,
      ...(this.config.name && { workload: this.config.name }),
    };
  }

  readiness(): WorkloadReadiness {
    const lines: string[] = [];
    const cert = this.certificates.status();
    const error = cert.lastError ? `; last request failed: ${cert.lastError.message}` : '';
    const certOk = cert.state === 'valid';
    if (cert.state === 'valid')
      lines.push(
        `certificate: ${cert.identity ?? ''} valid until ${cert.notAfter?.toISOString() ?? ''}${error}`,
      );
    else if (cert.state === 'expired')
      lines.push(`certificate: expired at ${cert.notAfter?.toISOString() ?? ''}${error || '; renewing'}`);
    else lines.push(`certificate: none yet${error || ' (enrolling)'}`);
    const nodes = this.cache.list().length;
    const upstream = this.upstream;
    const connected = upstream.connected();
    if (connected) lines.push(`control plane: connected to ${upstream.address}`);
    else {
      const why = upstream.lastError()?.message;
      lines.push(
        `control plane: ${upstream.state === 'down' ? 'unreachable' : 'connecting'} (${upstream.address})${why ? `: ${why}` : ''}`,
      );
      lines.push(
        nodes > 0
          ? `serving from the cache: ${nodes} node(s), newest config from ${new Date(this.cache.newestUpdate() ?? 0).toISOString()}`
          : 'cache: empty, nothing to serve local clients yet',
      );
    }
    let modulesOk = true;
    for (const m of this.config.modules ?? []) {
      const why = m.notReady?.();
      if (why) {
        modulesOk = false;
        lines.push(`${m.name}: ${why}`);
      }
    }
    return { ready: certOk && (connected || nodes > 0) && modulesOk, lines };
  }

  /** What /debug/workloads shows of it. */
  status(): Record<string, unknown> {
    const cert = this.certificates.status();
    return {
      name: this.config.name ?? null,
      identity: this.certificates.current()?.identity ?? null,
      certificate: { state: cert.state, notAfter: cert.notAfter?.toISOString() ?? null },
      certDir: this.config.certificate.outDir,
      xds: this.xds.addresses,
      sds: this.sds?.address ?? null,
      user: this.config.owner?.user ?? null,
      controlPlane: { address: this.upstream.address, state: this.upstream.state },
      localStreams: this.xds.count(),
      cacheNodes: this.cache.list().length,
    };
  }

  /** Its modules first (reverse order), then its servers, its connection and the renewals. */
  async stop(): Promise<void> {
    for (const m of [...this.started].reverse())
      await m.stop().catch((err: unknown) => this.logger.error({ err }, `${m.name}: stop failed`));
    await this.xds.stop();
    await this.sds?.stop();
    this.upstream.stop();
    this.abort.abort();
    await this.keeper;
    this.files.stop();
    for (const s of this.sockets) rmSync(s, { force: true });
  }
}
