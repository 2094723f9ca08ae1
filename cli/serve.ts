// Assembles and runs the control plane: store → registries (warm-started from it) → aggregate → ADS
// server, plus the admin server. Used by `portolan serve` and, in-process, by tests.
import { mkdirSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { mockRegistryFactory } from '../adapters/mock/factory.js';
import type { MockRegistry } from '../adapters/mock/registry.js';
import { builtBy } from '../adapters/registry-factory.js';
import type { Registry } from '../model/registry.js';
import { AdminServer } from '../admin/admin-server.js';
import { mockExposureWarning } from '../admin/mock-api.js';
import { PushHistory } from '../admin/push-history.js';
import { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import { configDirFactory } from '../config-dir/factory.js';
import type { Logger } from '../log/logger.js';
import { NO_MESH_CONFIG, withMeshSettings } from '../mesh/mesh-config.js';
import { AdsServer } from '../xds/server/ads-server.js';
import { ConnectionLogObserver } from '../xds/server/connection-log.js';
import { composeObservers } from '../xds/server/observer.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../xds/generators/index.js';
import { protoRoot } from '../xds/proto/protos.js';
import { checkPushConsistency } from '../xds/validate/push-consistency.js';
import { validatePushesEnabled } from '../xds/validate/validating-generator.js';
import { AdsMetrics } from '../metrics/ads-metrics.js';
import { PortolanMetrics } from '../metrics/metrics.js';
import { DataDirLockedError, lockDataDir, type DataDirLock } from '../store/data-dir-lock.js';
import { RegistryPersistence } from '../store/registry-persistence.js';
import { PostgresHistoryMirror } from '../store/postgres/history-mirror.js';
import { PostgresRegistrations } from '../store/postgres/auto-registrations.js';
import { PostgresSnapshotMirror, pullSharedSnapshots } from '../store/postgres/snapshot-mirror.js';
import { Store } from '../store/store.js';
import { DEFAULT_GRACE_MS, wireAutoRegistration } from './auto-registration.js';
import { startCa, type RunningCa } from './ca-serve.js';
import { startReplication } from './replication.js';
import { openPostgres, replicaId } from './store-options.js';
import { OptionError, type HostAndPort, type ServeOptions } from './options.js';
import { REGISTRY_FACTORIES } from './registries.js';
import { ShutdownSteps } from './shutdown.js';
import { isLoopback, listenFailure } from './listen-errors.js';

export interface RunningPortolan {
  readonly xdsAddress: HostAndPort;
  readonly httpAddress: HostAndPort;
  /** The CA signing API and mTLS ADS, when --secure-xds-addr is not off. */
  readonly secureXdsAddress?: HostAndPort;
  readonly discovery: AggregateDiscovery;
  readonly ads: AdsServer;
  readonly mock?: MockRegistry;
  stop(): Promise<void>;
  /** The steps stop() has started and not finished (for the shutdown deadline's log line). */
  waitingFor(): string[];
}

export async function startPortolan(options: ServeOptions, logger: Logger): Promise<RunningPortolan> {
  protoRoot(); // fail fast if the Envoy protos cannot be loaded
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  if (options.ca?.resetCa && !options.resetStore)
    throw new OptionError('--reset-ca: only with --reset-store');
  // One owner per data directory: a second serve on it stops here, naming the first one's pid.
  const lock = takeDataDir(options.dataDir);
  // What a start that fails half-way must undo besides the lock (the shared store's connections).
  const undo: (() => Promise<void>)[] = [];
  try {
    return await startLocked(options, logger, lock, (step) => undo.push(step));
  } catch (err) {
    for (const step of undo.reverse()) await step().catch(() => undefined);
    lock.release();
    throw err;
  }
}

function takeDataDir(dataDir: string): DataDirLock {
  try {
    return lockDataDir(dataDir);
  } catch (err) {
    if (err instanceof DataDirLockedError) throw new OptionError(err.message);
    throw err;
  }
}

async function startLocked(
  options: ServeOptions,
  logger: Logger,
  lock: DataDirLock,
  onFailure: (undo: () => Promise<void>) => void,
): Promise<RunningPortolan> {
  const metrics = new PortolanMetrics();
  const replica = options.replicaId ?? replicaId();
  const store = Store.open({
    dataDir: options.dataDir,
    replica,
    logger: logger.child({ component: 'store' }),
    reset: options.resetStore,
    resetCa: options.ca?.resetCa ?? false,
    historyLimit: options.historyLimit,
    onWriteError: () => metrics.storeWriteErrors.inc(),
  });
  // --store postgres://…: the CA's state shared with the other replicas (docs/ha.md).
  const shared = options.storeUrl ? await openPostgres(options.storeUrl, replica) : undefined;
  // …and the history, written behind to PostgreSQL too (the local rows stay as they are).
  const historyMirror =
    shared && new PostgresHistoryMirror(shared, options.historyLimit, logger.child({ component: 'store' }));
  if (historyMirror) store.history.mirrorTo(historyMirror);
  let proxiesOf: () => readonly string[] = () => [];
  const replication = startReplication(
    store,
    shared,
    replica,
    () => proxiesOf(),
    logger.child({ component: 'replicas' }),
  );
  onFailure(() => replication.stop());

  const registries: Registry[] = [];
  for (const name of options.registries) {
    const factory = REGISTRY_FACTORIES.find((f) => f.name === name);
    if (!factory) throw new OptionError(`--registries: unknown registry "${name}"`);
    registries.push(
      await factory.create({
        flags: options.flags,
        dataDir: options.dataDir,
        logger: logger.child({ component: factory.logComponent ?? name }),
        configHistory: store.history,
      }),
    );
  }
  // The two registries other parts talk to directly: the mesh config and /debug/configz read the
  // config directory; the admin API writes to the mock registry.
  const config = builtBy(configDirFactory, registries);
  const mock = builtBy(mockRegistryFactory, registries);
  // VMs registering through their agent (--group) become WorkloadEntries of the config registry.
  const auto =
    config &&
    wireAutoRegistration(
      config,
      store,
      options.autoRegistrationGraceMs ?? DEFAULT_GRACE_MS,
      logger.child({ component: 'auto-registration' }),
      shared && {
        store: shared,
        replica,
        leads: () => replication.leads(),
        held: await PostgresRegistrations.heldBy(shared, replica, logger),
      },
    );
  metrics.watchRegistries(registries);
  metrics.countRegistryEvents(registries);
  // --store: the last good snapshots are mirrored to PostgreSQL too, so any replica warm-starts.
  const mirror = shared && new PostgresSnapshotMirror(shared, logger.child({ component: 'store' }));
  const persistence = new RegistryPersistence(store, registries, logger.child({ component: 'store' }), {
    ...(mirror && { mirror }),
  });
  persistence.watch();
  // Warm start: until a registry syncs live, xDS is served from its last good snapshot (under
  // --store, the newer of the local one and the shared one).
  if (options.serveStale) {
    if (shared) await pullSharedSnapshots(shared, store.snapshots, logger.child({ component: 'store' }));
    persistence.restore();
  }
  const discovery = new AggregateDiscovery(registries);
  await discovery.start();

  // PORTOLAN_VALIDATE_PUSHES (debug): every resource checked against Envoy's rules, and every push
  // checked for dangling references across each Envoy view.
  const validate = validatePushesEnabled();
  const adsLogger = logger.child({ component: 'ads' });
  const generators = new GeneratorTable(
    DEFAULT_GENERATORS,
    validate,
    logger.child({ component: 'validate-pushes' }),
  );
  // grpc-js logs its own errors to the console (a bind failure as "E No address added…"): they go
  // to our log instead, at debug, and a failure the CLI explains is said once, in its words.
  const grpcLog = logger.child({ component: 'grpc' });
  grpc.setLogger({ error: (...args: unknown[]) => grpcLog.debug(args.map(String).join(' ')) });
  const pushHistory = new PushHistory();
  const ads = new AdsServer({
    discovery,
    logger: adsLogger,
    // --path-normalization rides on every mesh config (mesh/mesh-config.ts).
    meshConfig: withMeshSettings(config ?? NO_MESH_CONFIG, { pathNormalization: options.pathNormalization }),
    generators,
    ...(validate && { checkPush: (contexts) => checkPushConsistency(generators, contexts, adsLogger) }),
    observer: composeObservers(
      new AdsMetrics(metrics),
      new ConnectionLogObserver(store.proxies),
      pushHistory,
      ...(auto ? [auto.observer] : []),
    ),
    ...(auto && { admission: auto.admission }),
    pushWindowMs: options.pushWindowMs,
    maxPushDelayMs: options.pushMaxDelayMs,
    flowControl: {
      concurrency: options.pushConcurrency,
      newStreamsPerSecond: options.pushNewStreamsPerSecond,
      admissionMaxDelayMs: options.pushAdmissionMaxDelayMs,
    },
    ...(options.ca && { trustDomain: options.ca.trustDomain }),
    ...(options.limits && { limits: options.limits.stream, transport: options.limits.transport }),
  });
  metrics.watchAds(ads.gauges);
  proxiesOf = () => ads.streamList().flatMap((s) => (s.proxy ? [s.proxy.id] : []));

  // Request size, HTTP/2 and keepalive limits: the same on the secure port (cli/ca-serve.ts).
  const grpcServer = new grpc.Server(ads.serverOptions);
  ads.register(grpcServer);
  const xdsPort = await new Promise<number>((resolve, reject) => {
    const { host, port } = options.xdsAddr;
    grpcServer.bindAsync(
      `${host.includes(':') ? `[${host}]` : host}:${port}`,
      grpc.ServerCredentials.createInsecure(),
      (err, bound) => (err ? reject(err) : resolve(bound)),
    );
  }).catch(async (err: unknown) => {
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
    ...(config && { config }),
    ...(mock && { mock }),
    ...(auto && { autoRegistration: auto.registration }),
    metrics,
    store,
    ...(historyMirror && {
      // Rows recorded moments ago are written first, so this replica's latest ones show.
      sharedHistory: async (limit: number) => (await historyMirror.flush(), shared.recentHistory(limit)),
    }),
    pushHistory,
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
  if (!isLoopback(options.httpAddr.host))
    logger.warn(
      { httpAddress: `${options.httpAddr.host}:${httpInfo.port}` },
      'the admin port (debug views, the dashboard at /ui/, the mock API) is not on loopback: anyone who can reach it can read the mesh; it has no authentication',
    );
  const exposure = mockExposureWarning(options.registries, options.httpAddr.host);
  if (exposure) logger.warn({ httpAddress: options.httpAddr.host }, exposure);

  const xdsAddress = { host: options.xdsAddr.host, port: xdsPort };
  const httpAddress = { host: options.httpAddr.host, port: httpInfo.port };
  logger.info(
    {
      xdsAddress: `${xdsAddress.host}:${xdsAddress.port}`,
      httpAddress: `${httpAddress.host}:${httpAddress.port}`,
      ...(ca?.secureAddress && { secureXdsAddress: `${ca.secureAddress.host}:${ca.secureAddress.port}` }),
      registries: options.registries,
      ...(shared && { store: 'postgres', replica }),
    },
    'portolan serving',
  );

  const steps = new ShutdownSteps();
  return {
    xdsAddress,
    httpAddress,
    ...(ca?.secureAddress && { secureXdsAddress: ca.secureAddress }),
    discovery,
    ads,
    ...(mock && { mock }),
    async stop() {
      ads.stop();
      auto?.stop();
      await steps.run('CA and secure xDS port', () => ca?.stop());
      const streams = ads.streamList().length;
      await steps.run(
        `xDS gRPC server: ${streams} stream(s) open`,
        () =>
          new Promise<void>((resolve) => {
            // Give streams a moment to close cleanly, then cut them.
            const timer = setTimeout(() => {
              grpcServer.forceShutdown();
              resolve();
            }, 2000);
            grpcServer.tryShutdown(() => {
              clearTimeout(timer);
              resolve();
            });
          }),
      );
      await steps.run('admin HTTP server', () => admin.close());
      await discovery.stop((registry) => steps.run(`registry ${registry.name}`, () => registry.stop()));
      await steps.run('store', async () => {
        persistence.stop();
        await mirror?.flush();
        mirror?.stop();
        await historyMirror?.flush();
        historyMirror?.stop();
        store.close();
        await replication.stop();
      });
      await steps.run('data directory lock', () => lock.release());
    },
    waitingFor: () => steps.waitingFor(),
  };
}
