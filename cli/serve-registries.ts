// `portolan serve`, step 2: the registries (--registries), warm-started from the store, and the
// aggregate over them. The config directory and the mock registry are singled out (the mesh config,
// /debug/configz and the mock API talk to them); VMs registering through their agent (--group)
// become WorkloadEntries of the config registry.
import { mockRegistryFactory } from '../adapters/mock/factory.js';
import type { MockRegistry } from '../adapters/mock/registry.js';
import { builtBy } from '../adapters/registry-factory.js';
import { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import { configDirFactory } from '../config-dir/factory.js';
import type { ConfigDirRegistry } from '../config-dir/registry.js';
import { loadFormat } from '../config-dir/stored-load.js';
import type { Logger } from '../log/logger.js';
import type { PortolanMetrics } from '../metrics/metrics.js';
import type { Registry } from '../model/registry.js';
import type { AcceptedFiles } from '../model/accepted-files.js';
import { PostgresRegistrations } from '../store/postgres/auto-registrations.js';
import { SharedConfigLoadFiles } from '../store/postgres/config-load-mirror.js';
import { PostgresSnapshotMirror, pullSharedSnapshots } from '../store/postgres/snapshot-mirror.js';
import { defersRestore, RegistryPersistence } from '../store/registry-persistence.js';
import { DEFAULT_GRACE_MS, wireAutoRegistration, type WiredAutoRegistration } from './auto-registration.js';
import { OptionError, type ServeOptions } from './options.js';
import { REGISTRY_FACTORIES } from './registries.js';
import type { OpenStores } from './serve-stores.js';

export interface OpenRegistries {
  readonly registries: readonly Registry[];
  readonly discovery: AggregateDiscovery;
  /** The config directory, when --registries has `config`. */
  readonly config: ConfigDirRegistry | undefined;
  /** The mock registry, when --registries has `mock`. */
  readonly mock: MockRegistry | undefined;
  readonly auto: WiredAutoRegistration | undefined;
  readonly persistence: RegistryPersistence;
  /** --store: the last good snapshots mirrored to PostgreSQL too. */
  readonly snapshotMirror: PostgresSnapshotMirror | undefined;
  /** --store: the config loads shared through PostgreSQL. */
  readonly sharedLoads: SharedConfigLoadFiles | undefined;
}

export async function openRegistries(
  options: ServeOptions,
  logger: Logger,
  stores: OpenStores,
  metrics: PortolanMetrics,
): Promise<OpenRegistries> {
  const { store, shared, replica, replication } = stores;
  // --store: what other replicas' files loaded to, read before the config directory starts.
  const sharedLoads =
    shared &&
    (await SharedConfigLoadFiles.open(
      store.configLoads,
      shared,
      loadFormat(),
      logger.child({ component: 'store' }),
    ));
  const registries = await createRegistries(options, logger, stores, sharedLoads ?? store.configLoads);
  const config = builtBy(configDirFactory, registries);
  const mock = builtBy(mockRegistryFactory, registries);
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
  const snapshotMirror = shared && new PostgresSnapshotMirror(shared, logger.child({ component: 'store' }));
  const persistence = new RegistryPersistence(store, registries, logger.child({ component: 'store' }), {
    ...(snapshotMirror && { mirror: snapshotMirror }),
  });
  persistence.watch();
  // Warm start: until a registry syncs live, xDS is served from its last good snapshot (under
  // --store, the newer of the local one and the shared one).
  if (options.serveStale) {
    // A registry whose restore waits on its start takes the shared copy only if it is restored.
    const later = new Map(registries.filter(defersRestore).map((r) => [r.name, () => {}]));
    if (shared)
      await pullSharedSnapshots(shared, store.snapshots, logger.child({ component: 'store' }), later);
    persistence.restore(later);
  }
  const discovery = new AggregateDiscovery(registries);
  await discovery.start();
  sharedLoads?.started();
  return { registries, discovery, config, mock, auto, persistence, snapshotMirror, sharedLoads };
}

/** Stops keeping snapshots and writes out what is written behind (before the stores close). */
export async function stopPersistence(sources: OpenRegistries): Promise<void> {
  sources.persistence.stop();
  await sources.snapshotMirror?.flush();
  sources.snapshotMirror?.stop();
  await sources.sharedLoads?.flush();
  sources.sharedLoads?.stop();
}

/** One registry per --registries name, in that order. */
async function createRegistries(
  options: ServeOptions,
  logger: Logger,
  stores: OpenStores,
  acceptedFiles: AcceptedFiles,
): Promise<Registry[]> {
  const registries: Registry[] = [];
  for (const name of options.registries) {
    const factory = REGISTRY_FACTORIES.find((f) => f.name === name);
    if (!factory) throw new OptionError(`--registries: unknown registry "${name}"`);
    registries.push(
      await factory.create({
        flags: options.flags,
        dataDir: options.dataDir,
        logger: logger.child({ component: factory.logComponent ?? name }),
        configHistory: stores.store.history,
        acceptedFiles,
      }),
    );
  }
  return registries;
}
