// Assembles and runs the control plane: store → registries (warm-started from it) → aggregate → ADS
// server, plus the admin server. Used by `portolan serve` and, in-process, by tests. Each step is a
// file of its own: serve-stores.ts, serve-registries.ts, serve-ads.ts, serve-listeners.ts.
import { mkdirSync } from 'node:fs';
import type { MockRegistry } from '../adapters/mock/registry.js';
import type { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import type { Logger } from '../log/logger.js';
import { PortolanMetrics } from '../metrics/metrics.js';
import { DataDirLockedError, lockDataDir, type DataDirLock } from '../store/data-dir-lock.js';
import type { AdsServer } from '../xds/server/ads-server.js';
import { protoRoot } from '../xds/proto/protos.js';
import { OptionError, type HostAndPort, type ServeOptions } from './options.js';
import { makeAds } from './serve-ads.js';
import { openListeners, stopXdsServer, type OpenListeners } from './serve-listeners.js';
import { openRegistries, stopPersistence, type OpenRegistries } from './serve-registries.js';
import { closeStores, openStores, type OpenStores } from './serve-stores.js';
import { ShutdownSteps } from './shutdown.js';

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
  const stores = await openStores(options, logger, metrics, onFailure);
  const sources = await openRegistries(options, logger, stores, metrics);
  const made = makeAds(options, logger, stores, sources, metrics);
  const listeners = await openListeners(options, logger, stores, sources, made, metrics);
  logServing(options, logger, stores, listeners);
  return running(lock, stores, sources, made, listeners);
}

function logServing(
  options: ServeOptions,
  logger: Logger,
  stores: OpenStores,
  listeners: OpenListeners,
): void {
  const { xdsAddress, httpAddress, ca } = listeners;
  logger.info(
    {
      xdsAddress: `${xdsAddress.host}:${xdsAddress.port}`,
      httpAddress: `${httpAddress.host}:${httpAddress.port}`,
      ...(ca?.secureAddress && { secureXdsAddress: `${ca.secureAddress.host}:${ca.secureAddress.port}` }),
      registries: options.registries,
      ...(stores.shared && { store: 'postgres', replica: stores.replica }),
    },
    'portolan serving',
  );
}

/** The running control plane, and its stop: the ports, then the registries, then the stores. */
function running(
  lock: DataDirLock,
  stores: OpenStores,
  sources: OpenRegistries,
  { ads }: { ads: AdsServer },
  { grpcServer, xdsAddress, httpAddress, ca, admin }: OpenListeners,
): RunningPortolan {
  const { discovery, mock, auto } = sources;
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
      await steps.run(`xDS gRPC server: ${streams} stream(s) open`, () => stopXdsServer(grpcServer));
      await steps.run('admin HTTP server', () => admin.close());
      await discovery.stop((registry) => steps.run(`registry ${registry.name}`, () => registry.stop()));
      await steps.run('store', async () => {
        await stopPersistence(sources);
        await closeStores(stores);
      });
      await steps.run('data directory lock', () => lock.release());
    },
    waitingFor: () => steps.waitingFor(),
  };
}
