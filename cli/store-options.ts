// `--store postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=…&sslrootcert=…]` (or PORTOLAN_STORE_URL):
// the CA's state shared by several replicas on PostgreSQL (issue #20, docs/ha.md). Without it, the
// embedded SQLite store in --data-dir, as for one replica. The URL is libpq's: PGPASSWORD (and the
// other PG* variables) fill what it leaves out; sslmode=require or verify-full with sslrootcert.
import type { CaMaterial } from '../ca/authority.js';
import { hostname } from 'node:os';
import { createLogger } from '../log/logger.js';
import { PostgresStore } from '../store/postgres/postgres-store.js';
import type { SharedStore } from '../store/shared-store.js';
import { SqliteSharedStore } from '../store/sqlite-shared.js';
import { Store } from '../store/store.js';
import { OptionError } from '../adapters/option-values.js';

import { storeUrl } from './store-flags.js';
export {
  addStoreFlag,
  REPLICA_ID_ENV,
  replicaId,
  STORE_FLAG_HELP,
  STORE_URL_ENV,
  storeUrl,
} from './store-flags.js';

/** Opens (and migrates) the shared store; a refusal (unreachable, newer schema) is an OptionError. */
export async function openPostgres(url: string, replica: string): Promise<PostgresStore> {
  try {
    return await PostgresStore.open({ url, replica });
  } catch (err) {
    throw new OptionError(`--store: ${(err as Error).message}`);
  }
}

/** What a store command works on: the CA's material and the shared state, on SQLite or PostgreSQL. */
export interface CommandStore {
  readonly material: CaMaterial;
  readonly shared: SharedStore;
}

/**
 * Opens the store a command names (--store / PORTOLAN_STORE_URL, else SQLite in --data-dir), runs
 * `fn` on it and closes it.
 */
export async function withCommandStore<T>(
  opts: { readonly dataDir: string; readonly store?: string },
  fn: (store: CommandStore) => Promise<T>,
): Promise<T> {
  const url = storeUrl(opts.store);
  if (url) {
    const pg = await openPostgres(url, `cli-${hostname()}-${process.pid}`);
    try {
      return await fn({ material: pg, shared: pg });
    } finally {
      await pg.close().catch(() => undefined);
    }
  }
  const store = Store.open({ dataDir: opts.dataDir, logger: createLogger('warn') });
  try {
    return await fn({ material: store.ca, shared: new SqliteSharedStore(store) });
  } finally {
    store.close();
  }
}
