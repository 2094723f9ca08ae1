// An in-process control plane for integration tests and benchmarks, assembled the way `portolan
// serve` assembles it (cli/serve.ts): registries (the mock, a config directory, the test's own) →
// aggregate → ADS on a loopback port, with the generator table, push validation and observers
// (metrics, the proxy history) passed in. The one builder every test plane goes through.
import * as grpc from '@grpc/grpc-js';
import { MockRegistry } from '../../adapters/mock/registry.js';
import { AggregateDiscovery } from '../../aggregate/aggregate-discovery.js';
import { ConfigDirRegistry } from '../../config-dir/registry.js';
import type { ConfigHistory } from '../../model/config-history.js';
import { silentLogger } from '../../log/logger.js';
import { AdsMetrics } from '../../metrics/ads-metrics.js';
import type { PortolanMetrics } from '../../metrics/metrics.js';
import type { Registry } from '../../model/registry.js';
import { RegistryPersistence } from '../../store/registry-persistence.js';
import type { Store } from '../../store/store.js';
import type { GeneratorLookup } from '../../xds/generators/generator.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../../xds/generators/index.js';
import { AdsServer, type StreamAdmission } from '../../xds/server/ads-server.js';
import { ConnectionLogObserver, type ConnectionLog } from '../../xds/server/connection-log.js';
import type { FlowControlOptions } from '../../xds/server/flow-control.js';
import { composeObservers, type AdsObserver } from '../../xds/server/observer.js';
import type { StreamLimits } from '../../xds/server/stream-limits.js';
import type { TransportLimits } from '../../xds/server/transport-limits.js';
import { checkPushConsistency } from '../../xds/validate/push-consistency.js';
import { validatePushesEnabled } from '../../xds/validate/validating-generator.js';
import { PushProgress } from './push-progress.js';

export interface InProcessPlane {
  readonly mock: MockRegistry;
  readonly discovery: AggregateDiscovery;
  readonly ads: AdsServer;
  /** Present when started with `configDir`. */
  readonly config?: ConfigDirRegistry;
  /** With `persistence` and `serveStale`: the registries whose stored snapshot was restored. */
  readonly restored: readonly string[];
  readonly address: string;
  /** The pushes handed out (wait for one before checking that a stream was sent nothing). */
  readonly progress: PushProgress;
  stop(): Promise<void>;
}

export interface PlaneOptions {
  /** The mock registry, when the test fills it before the plane starts (default: an empty one). */
  readonly mock?: MockRegistry;
  /** The push debouncer's quiet period (default 0: every change is pushed at once). */
  readonly pushWindowMs?: number;
  /** Registries after the mock (and the config directory), in this order. */
  readonly extraRegistries?: readonly Registry[];
  /** A watched config directory: the `config` registry and the mesh config. */
  readonly configDir?: string;
  /** The config directory's quiet period (default 20 ms). */
  readonly configDebounceMs?: number;
  /** Where the config directory keeps accepted versions and its history (a store's `history`). */
  readonly configHistory?: ConfigHistory;
  /** Prometheus metrics: the ADS observer and the live gauges, as `portolan serve` has them. */
  readonly metrics?: PortolanMetrics;
  /** Where connections and disconnects are recorded (a store's `proxies`). */
  readonly connectionLog?: ConnectionLog;
  /** More observers of the ADS server, after metrics and the connection log. */
  readonly observers?: readonly AdsObserver[];
  /**
   * Keeps the extra registries' snapshots in `store` (warm start); with `serveStale`, restores them
   * before the registries start. The store stays the caller's to close.
   */
  readonly persistence?: {
    readonly store: Store;
    readonly serveStale: boolean;
    readonly debounceMs?: number;
  };
  /** The generator table (default: every generator). */
  readonly generators?: GeneratorLookup;
  /** PORTOLAN_VALIDATE_PUSHES: validate every resource and check every push (default: from the environment). */
  readonly validatePushes?: boolean;
  /** The SPIFFE trust domain TLS contexts name. */
  readonly trustDomain?: string;
  /** Checks each stream once its node is known (auto-registration's refusals). */
  readonly admission?: StreamAdmission;
  /** Stream limits other than the defaults (names per type, streams per peer, first request). */
  readonly limits?: Partial<StreamLimits>;
  /**
   * Serve with the ADS server's gRPC options (request size, HTTP/2 and keepalive limits), these
   * overriding its defaults; without, the plane's port has grpc-js's own defaults.
   */
  readonly transport?: Partial<TransportLimits>;
  /** Push flow control other than the defaults (write limit, new-stream rate, adaptive admission). */
  readonly flowControl?: Partial<FlowControlOptions>;
}

export async function startInProcessPlane(options: PlaneOptions = {}): Promise<InProcessPlane> {
  const { pushWindowMs = 0, extraRegistries = [], configDir } = options;
  const mock = options.mock ?? new MockRegistry();
  const config =
    configDir === undefined
      ? undefined
      : new ConfigDirRegistry({
          dir: configDir,
          debounceMs: options.configDebounceMs ?? 20,
          ...(options.configHistory && { history: options.configHistory }),
        });
  const persistence =
    options.persistence &&
    new RegistryPersistence(options.persistence.store, extraRegistries, silentLogger, {
      ...(options.persistence.debounceMs !== undefined && { debounceMs: options.persistence.debounceMs }),
    });
  persistence?.watch();
  const restored = options.persistence?.serveStale && persistence ? persistence.restore() : [];
  const discovery = new AggregateDiscovery([mock, ...(config ? [config] : []), ...extraRegistries]);
  await discovery.start();

  const validate = options.validatePushes ?? validatePushesEnabled();
  const generators = options.generators ?? new GeneratorTable(DEFAULT_GENERATORS, validate);
  const observers = [
    ...(options.metrics ? [new AdsMetrics(options.metrics)] : []),
    ...(options.connectionLog ? [new ConnectionLogObserver(options.connectionLog)] : []),
    ...(options.observers ?? []),
  ];
  const progress = new PushProgress();
  observers.push(progress);
  const ads = new AdsServer({
    discovery,
    logger: silentLogger,
    pushWindowMs,
    ...(config && { meshConfig: config, configGeneration: () => config.generation() }),
    generators,
    ...(validate && { checkPush: (contexts) => checkPushConsistency(generators, contexts, silentLogger) }),
    observer: composeObservers(...observers),
    ...(options.trustDomain && { trustDomain: options.trustDomain }),
    ...(options.admission && { admission: options.admission }),
    ...(options.limits && { limits: options.limits }),
    ...(options.transport && { transport: options.transport }),
    ...(options.flowControl && { flowControl: options.flowControl }),
  });
  options.metrics?.watchAds(ads.gauges);
  const server = new grpc.Server(options.transport ? ads.serverOptions : {});
  ads.register(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    mock,
    discovery,
    ads,
    ...(config && { config }),
    restored,
    address: `127.0.0.1:${port}`,
    progress,
    async stop() {
      ads.stop();
      server.forceShutdown();
      await discovery.stop();
      persistence?.stop();
    },
  };
}
