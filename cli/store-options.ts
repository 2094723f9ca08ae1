// `--store postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=…&sslrootcert=…]` (or PORTOLAN_STORE_URL):
// the CA's state shared by several replicas on PostgreSQL (issue #20, docs/ha.md). Without it, the
// embedded SQLite store in --data-dir, as for one replica. The URL is libpq's: PGPASSWORD (and the
// other PG* variables) fill what it leaves out; sslmode=require or verify-full with sslrootcert.
import type { Command } from 'commander';
import { hostname } from 'node:os';
import type { CaMaterial } from '../ca/authority.js';
import { createLogger } from '../log/logger.js';
import { PostgresStore } from '../store/postgres/postgres-store.js';
import { redactStoreUrl } from '../store/redact-url.js';
import type { SharedStore } from '../store/shared-store.js';
import { SqliteSharedStore } from '../store/sqlite-shared.js';
import { Store } from '../store/store.js';
import { OptionError } from '../adapters/option-values.js';

export const STORE_URL_ENV = 'PORTOLAN_STORE_URL';
export const REPLICA_ID_ENV = 'PORTOLAN_REPLICA_ID';

export const STORE_FLAG_HELP =
  `shared store for several replicas: postgres://USER@HOST:PORT/DB (libpq URL; password in it or PGPASSWORD, ` +
  `sslmode=require|verify-full&sslrootcert=FILE); default $${STORE_URL_ENV}, else SQLite in --data-dir`;

/** Adds --store to a command. */
export function addStoreFlag(command: Command): Command {
  return command.option('--store <url>', STORE_FLAG_HELP);
}

/** The PostgreSQL URL from --store or PORTOLAN_STORE_URL, or undefined for SQLite in --data-dir. */
export function storeUrl(flag: string | undefined): string | undefined {
  const url = flag ?? (process.env[STORE_URL_ENV] || undefined);
  if (url === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new OptionError(`--store: not a URL (expected postgres://USER@HOST:PORT/DB)`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
    throw new OptionError(
      `--store ${redactStoreUrl(url)}: only postgres:// is supported (SQLite is the default, in --data-dir)`,
    );
  if (!parsed.pathname || parsed.pathname === '/')
    throw new OptionError(`--store ${redactStoreUrl(url)}: name the database (postgres://USER@HOST:PORT/DB)`);
  return url;
}

/** This replica's name in the shared store (rows it writes, /debug/replicas): --replica-id, else host-pid. */
export function replicaId(flag?: string): string {
  const id = flag ?? (process.env[REPLICA_ID_ENV] || `${hostname()}-${process.pid}`);
  if (!/^[\w.:-]{1,128}$/.test(id))
    throw new OptionError(`--replica-id ${id}: letters, digits, . _ : - only (at most 128)`);
  return id;
}

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
