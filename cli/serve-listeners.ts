// `portolan serve`, step 4: the ports. ADS in plaintext on --xds-addr; the CA's signing API and mTLS
// ADS on --secure-xds-addr (cli/ca-serve.ts); the admin HTTP server on --http-addr. A port that
// cannot be bound fails the start with the flag named (listen-errors.ts), after closing the ports
// already open.
import * as grpc from '@grpc/grpc-js';
import { AdminServer } from '../admin/admin-server.js';
import { DiffService } from '../admin/diff.js';
import { mockExposureWarning } from '../admin/mock-api.js';
import type { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import type { ConfigDirRegistry } from '../config-dir/registry.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../xds/generators/index.js';
import type { AdsServer } from '../xds/server/ads-server.js';
import type { Logger } from '../log/logger.js';
import type { PortolanMetrics } from '../metrics/metrics.js';
import { startCa, type RunningCa } from './ca-serve.js';
import { isLoopback, listenFailure } from './listen-errors.js';
import type { HostAndPort, ServeOptions } from './options.js';
import type { MadeAds } from './serve-ads.js';
import type { OpenRegistries } from './serve-registries.js';
import type { OpenStores } from './serve-stores.js';

export interface OpenListeners {
  readonly grpcServer: grpc.Server;
  readonly xdsAddress: HostAndPort;
  readonly httpAddress: HostAndPort;
  readonly ca: RunningCa | undefined;
  readonly admin: AdminServer;
}

export async function openListeners(
  options: ServeOptions,
  logger: Logger,
  stores: OpenStores,
  sources: OpenRegistries,
  { ads, pushHistory, withheld }: MadeAds,
  metrics: PortolanMetrics,
): Promise<OpenListeners> {
  const { store, shared, historyMirror, replication } = stores;
  const { discovery, config, mock, auto } = sources;
  // Request size, HTTP/2 and keepalive limits: the same on the secure port (cli/ca-serve.ts).
  const grpcServer = new grpc.Server(ads.serverOptions);
  ads.register(grpcServer);
  const xdsPort = await bindInsecure(grpcServer, options.xdsAddr).catch(async (err: unknown) => {
    throw await listenFailure('--xds-addr', options.xdsAddr, err);
  });

  const secureAddr = options.ca?.secureXdsAddr;
  const ca: RunningCa | undefined = options.ca
    ? await startCa(options.ca, replication.backing, ads, logger.child({ component: 'ca' })).catch(
        async (err: unknown) => {
          grpcServer.forceShutdown();
          throw secureAddr ? await listenFailure('--secure-xds-addr', secureAddr, err) : err;
        },
      )
    : undefined;

  const admin = new AdminServer({
    discovery,
    ads,
    ...(config && { config, diff: diffService(options, config, discovery, ads) }),
    ...(mock && { mock }),
    ...(auto && { autoRegistration: auto.registration }),
    metrics,
    store,
    ...(historyMirror &&
      shared && {
        // Rows recorded moments ago are written first, so this replica's latest ones show.
        sharedHistory: async (limit: number) => (await historyMirror.flush(), shared.recentHistory(limit)),
      }),
    pushHistory,
    withheld,
    ...(ca && { ca: ca.ca }),
    ...(shared && { replicas: replication }),
    logger: logger.child({ component: 'admin' }),
  });
  const httpInfo = await admin
    .listen(options.httpAddr.host, options.httpAddr.port)
    .catch(async (err: unknown) => {
      await ca?.stop();
      grpcServer.forceShutdown();
      throw await listenFailure('--http-addr', options.httpAddr, err);
    });
  warnOfExposure(options, logger, httpInfo.port);
  return {
    grpcServer,
    xdsAddress: { host: options.xdsAddr.host, port: xdsPort },
    httpAddress: { host: options.httpAddr.host, port: httpInfo.port },
    ca,
    admin,
  };
}

/**
 * POST /debug/diff: the config registry's candidates, merged like the catalog and previewed with the
 * generators as they are (no PORTOLAN_VALIDATE_PUSHES wrapper: the client's own verdict is asked).
 */
function diffService(
  options: ServeOptions,
  config: ConfigDirRegistry,
  discovery: AggregateDiscovery,
  ads: AdsServer,
): DiffService {
  return new DiffService({
    config,
    discovery,
    streams: () => ads.streamList(),
    generators: new GeneratorTable(DEFAULT_GENERATORS),
    meshSettings: { pathNormalization: options.pathNormalization },
    ...(options.ca && { trustDomain: options.ca.trustDomain }),
  });
}

/** Gives streams a moment to close cleanly, then cuts them. */
export function stopXdsServer(grpcServer: grpc.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      grpcServer.forceShutdown();
      resolve();
    }, 2000);
    grpcServer.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function bindInsecure(grpcServer: grpc.Server, { host, port }: HostAndPort): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    grpcServer.bindAsync(
      `${host.includes(':') ? `[${host}]` : host}:${port}`,
      grpc.ServerCredentials.createInsecure(),
      (err, bound) => (err ? reject(err) : resolve(bound)),
    );
  });
}

/** The admin port off loopback, or the mock API served where others reach it: said at start. */
function warnOfExposure(options: ServeOptions, logger: Logger, httpPort: number): void {
  if (!isLoopback(options.httpAddr.host))
    logger.warn(
      { httpAddress: `${options.httpAddr.host}:${httpPort}` },
      'the admin port (debug views, the dashboard at /ui/, the mock API) is not on loopback: anyone who can reach it can read the mesh; it has no authentication',
    );
  const exposure = mockExposureWarning(options.registries, options.httpAddr.host);
  if (exposure) logger.warn({ httpAddress: options.httpAddr.host }, exposure);
}
