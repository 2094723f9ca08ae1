// --store and --replica-id as flags: their help, the variables behind them and their checks, apart
// from opening a store (store-options.ts), so defining a command does not load the database drivers.
import type { Command } from 'commander';
import { hostname } from 'node:os';
import { OptionError } from '../adapters/option-values.js';
import { redactStoreUrl } from '../store/redact-url.js';

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
