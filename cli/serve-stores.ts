// `portolan serve`, step 1: the stores. This replica's SQLite store in the data directory; with
// --store postgres://…, the state shared with the other replicas (docs/ha.md) and the history
// written behind to it; and the replication around them (heartbeat, leadership, the store's health).
import type { Logger } from '../log/logger.js';
import type { PortolanMetrics } from '../metrics/metrics.js';
import { PostgresHistoryMirror } from '../store/postgres/history-mirror.js';
import type { PostgresStore } from '../store/postgres/postgres-store.js';
import { Store } from '../store/store.js';
import type { ServeOptions } from './options.js';
import { startReplication, type Replication } from './replication.js';
import { openPostgres, replicaId } from './store-options.js';

export interface OpenStores {
  readonly replica: string;
  readonly store: Store;
  /** --store postgres://…: the CA's state shared with the other replicas. */
  readonly shared: PostgresStore | undefined;
  /** The history written behind to the shared store (the local rows stay as they are). */
  readonly historyMirror: PostgresHistoryMirror | undefined;
  readonly replication: Replication;
  /** Tells the replication which proxies this replica serves (its heartbeat lists them). */
  serveProxies(list: () => readonly string[]): void;
}

/** Opens the stores; `onFailure` is given what a start failing later must undo. */
export async function openStores(
  options: ServeOptions,
  logger: Logger,
  metrics: PortolanMetrics,
  onFailure: (undo: () => Promise<void>) => void,
): Promise<OpenStores> {
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
  const shared = options.storeUrl ? await openPostgres(options.storeUrl, replica) : undefined;
  const historyMirror =
    shared && new PostgresHistoryMirror(shared, options.historyLimit, logger.child({ component: 'store' }));
  if (historyMirror) store.history.mirrorTo(historyMirror);
  // The ADS server, which knows the proxies, is made after the replication: it is asked late.
  let proxiesOf: () => readonly string[] = () => [];
  const replication = startReplication(
    store,
    shared,
    replica,
    () => proxiesOf(),
    logger.child({ component: 'replicas' }),
  );
  onFailure(() => replication.stop());
  return {
    replica,
    store,
    shared,
    historyMirror,
    replication,
    serveProxies: (list) => {
      proxiesOf = list;
    },
  };
}

/** Writes out what is written behind and closes the stores (the last step of a stop). */
export async function closeStores(stores: OpenStores): Promise<void> {
  await stores.historyMirror?.flush();
  stores.historyMirror?.stop();
  stores.store.close();
  await stores.replication.stop();
}
