// `portolan serve`, step 3: the ADS server over the aggregate, with the generators, push validation
// (PORTOLAN_VALIDATE_PUSHES) and its observers: metrics, the proxy history, the push history and
// auto-registration. Not yet listening (serve-listeners.ts).
import * as grpc from '@grpc/grpc-js';
import { PushHistory } from '../admin/push-history.js';
import type { Logger } from '../log/logger.js';
import { NO_MESH_CONFIG, withMeshSettings } from '../mesh/mesh-config.js';
import { AdsMetrics } from '../metrics/ads-metrics.js';
import type { PortolanMetrics } from '../metrics/metrics.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../xds/generators/index.js';
import { AdsServer } from '../xds/server/ads-server.js';
import { ConnectionLogObserver } from '../xds/server/connection-log.js';
import { composeObservers } from '../xds/server/observer.js';
import { checkPushConsistency } from '../xds/validate/push-consistency.js';
import { validatePushesEnabled } from '../xds/validate/validating-generator.js';
import type { ServeOptions } from './options.js';
import type { OpenRegistries } from './serve-registries.js';
import type { OpenStores } from './serve-stores.js';

export interface MadeAds {
  readonly ads: AdsServer;
  /** Recent pushes and NACKs (/debug/push_status, the dashboard). */
  readonly pushHistory: PushHistory;
}

export function makeAds(
  options: ServeOptions,
  logger: Logger,
  stores: OpenStores,
  sources: OpenRegistries,
  metrics: PortolanMetrics,
): MadeAds {
  const { config, auto, discovery } = sources;
  // PORTOLAN_VALIDATE_PUSHES (debug): every resource checked against Envoy's rules, and every push
  // checked for dangling references across each Envoy view.
  const validate = validatePushesEnabled();
  const adsLogger = logger.child({ component: 'ads' });
  const generators = new GeneratorTable(
    DEFAULT_GENERATORS,
    validate,
    logger.child({ component: 'validate-pushes' }),
  );
  routeGrpcLogs(logger);
  const pushHistory = new PushHistory();
  const ads = new AdsServer({
    discovery,
    logger: adsLogger,
    // --path-normalization rides on every mesh config (mesh/mesh-config.ts).
    meshConfig: withMeshSettings(config ?? NO_MESH_CONFIG, { pathNormalization: options.pathNormalization }),
    generators,
    ...(config && { configGeneration: () => config.generation() }),
    ...(validate && { checkPush: (contexts) => checkPushConsistency(generators, contexts, adsLogger) }),
    observer: composeObservers(
      new AdsMetrics(metrics),
      new ConnectionLogObserver(stores.store.proxies),
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
  stores.serveProxies(() => ads.streamList().flatMap((s) => (s.proxy ? [s.proxy.id] : [])));
  return { ads, pushHistory };
}

/**
 * grpc-js logs its own errors to the console (a bind failure as "E No address added…"): they go
 * to our log instead, at debug, and a failure the CLI explains is said once, in its words.
 */
function routeGrpcLogs(logger: Logger): void {
  const grpcLog = logger.child({ component: 'grpc' });
  grpc.setLogger({ error: (...args: unknown[]) => grpcLog.debug(args.map(String).join(' ')) });
}
