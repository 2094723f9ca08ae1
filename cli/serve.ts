// Assembles and runs the control plane: store → registries (warm-started from it) → aggregate → ADS
// server, plus the admin server. Used by `portolan serve` and, in-process, by tests.
import { mkdirSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { mockRegistryFactory } from '../adapters/mock/factory.js';
import type { MockRegistry } from '../adapters/mock/registry.js';
import { builtBy } from '../adapters/registry-factory.js';
import type { Registry } from '../model/registry.js';
import { AdminServer } from '../admin/admin-server.js';
import { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import { configDirFactory } from '../config-dir/factory.js';
import type { Logger } from '../log/logger.js';
import { AdsServer } from '../xds/server/ads-server.js';
import { ConnectionLogObserver } from '../xds/server/connection-log.js';
import { composeObservers } from '../xds/server/observer.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../xds/generators/index.js';
import { protoRoot } from '../xds/proto/protos.js';
import { checkPushConsistency } from '../xds/validate/push-consistency.js';
import { validatePushesEnabled } from '../xds/validate/validating-generator.js';
import { AdsMetrics } from '../metrics/ads-metrics.js';
import { PortolanMetrics } from '../metrics/metrics.js';
import { RegistryPersistence } from '../store/registry-persistence.js';
import { Store } from '../store/store.js';
import { DEFAULT_GRACE_MS, wireAutoRegistration } from './auto-registration.js';
import { startCa, type RunningCa } from './ca-serve.js';
import { OptionError, type HostAndPort, type ServeOptions } from './options.js';
import { REGISTRY_FACTORIES } from './registries.js';

export interface RunningPortolan {
  readonly xdsAddress: HostAndPort;
  readonly httpAddress: HostAndPort;
  /** The CA signing API and mTLS ADS, when --secure-xds-addr is not off. */
  readonly secureXdsAddress?: HostAndPort;
  readonly discovery: AggregateDiscovery;
  readonly ads: AdsServer;
  readonly mock?: MockRegistry;
  stop(): Promise<void>;
}

export async function startPortolan(options: ServeOptions, logger: Logger): Promise<RunningPortolan> {
  protoRoot(); // fail fast if the Envoy protos cannot be loaded
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const metrics = new PortolanMetrics();
  const store = Store.open({
    dataDir: options.dataDir,
    logger: logger.child({ component: 'store' }),
    reset: options.resetStore,
    historyLimit: options.historyLimit,
    onWriteError: () => metrics.storeWriteErrors.inc(),
  });

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
    );
  metrics.watchRegistries(registries);
  metrics.countRegistryEvents(registries);
  const persistence = new RegistryPersistence(store, registries, logger.child({ component: 'store' }));
  persistence.watch();
  // Warm start: until a registry syncs live, xDS is served from its last good snapshot.
  if (options.serveStale) persistence.restore();
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
  const ads = new AdsServer({
    discovery,
    logger: adsLogger,
    ...(config && { meshConfig: config }),
    generators,
    ...(validate && { checkPush: (contexts) => checkPushConsistency(generators, contexts, adsLogger) }),
    observer: composeObservers(
      new AdsMetrics(metrics),
      new ConnectionLogObserver(store.proxies),
      ...(auto ? [auto.observer] : []),
    ),
    ...(auto && { admission: auto.admission }),
    pushWindowMs: options.pushWindowMs,
    maxPushDelayMs: options.pushMaxDelayMs,
    flowControl: {
      concurrency: options.pushConcurrency,
      newStreamsPerSecond: options.pushNewStreamsPerSecond,
    },
    ...(options.ca && { trustDomain: options.ca.trustDomain }),
    ...(options.limits && { limits: options.limits.stream, transport: options.limits.transport }),
  });
  metrics.watchAds(ads.gauges);

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
  });

  const ca: RunningCa | undefined = options.ca
    ? await startCa(options.ca, store, ads, logger.child({ component: 'ca' }))
    : undefined;

  const admin = new AdminServer({
    discovery,
    ads,
    ...(config && { config }),
    ...(mock && { mock }),
    ...(auto && { autoRegistration: auto.registration }),
    metrics,
    store,
    logger: logger.child({ component: 'admin' }),
  });
  const httpInfo = await admin.listen(options.httpAddr.host, options.httpAddr.port);

  const xdsAddress = { host: options.xdsAddr.host, port: xdsPort };
  const httpAddress = { host: options.httpAddr.host, port: httpInfo.port };
  logger.info(
    {
      xdsAddress: `${xdsAddress.host}:${xdsAddress.port}`,
      httpAddress: `${httpAddress.host}:${httpAddress.port}`,
      ...(ca?.secureAddress && { secureXdsAddress: `${ca.secureAddress.host}:${ca.secureAddress.port}` }),
      registries: options.registries,
    },
    'portolan serving',
  );

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
      await ca?.stop();
      await new Promise<void>((resolve) => {
        // Give streams a moment to close cleanly, then cut them.
        const timer = setTimeout(() => {
          grpcServer.forceShutdown();
          resolve();
        }, 2000);
        grpcServer.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      await admin.close();
      await discovery.stop();
      persistence.stop();
      store.close();
    },
  };
}
