// `portolan serve` options: the raw flags (documented in --help and the README), their defaults, and
// the compiled form the server runs with.
import type { LevelWithSilent } from 'pino';

import { compileCaServeOptions, type CaServeOptions } from './ca-options.js';
import { compileLimitOptions, type LimitOptions } from './limit-options.js';
import { knownRegistries } from './registries.js';
import {
  OptionError,
  parseAddress,
  parseDurationMs,
  parsePositiveInt,
  type HostAndPort,
} from '../adapters/option-values.js';

import { replicaId, storeUrl } from './store-flags.js';
import {
  DEFAULT_PATH_NORMALIZATION,
  PATH_NORMALIZATION_LEVELS,
  type PathNormalization,
} from '../mesh/mesh-config.js';

export { OptionError, parseAddress, parseDurationMs, parsePositiveInt, type HostAndPort };

export { SERVE_DEFAULTS, type RawServeOptions } from './serve-defaults.js';
import type { RawServeOptions } from './serve-defaults.js';

export interface ServeOptions {
  readonly registries: readonly string[];
  readonly configDir: string;
  readonly dataDir: string;
  readonly xdsAddr: HostAndPort;
  readonly httpAddr: HostAndPort;
  readonly logLevel: LevelWithSilent;
  /** Quiet period of the push debouncer (--push-window). */
  readonly pushWindowMs: number;
  readonly pushMaxDelayMs: number;
  readonly pushConcurrency: number;
  readonly pushNewStreamsPerSecond: number;
  /** New streams beyond that rate are admitted while the event loop's delay stays under this; 0: never. */
  readonly pushAdmissionMaxDelayMs: number;
  /** Serve registries' stored snapshots at once on start, until they sync live. */
  readonly serveStale: boolean;
  /** Move an unreadable database aside instead of refusing to start. */
  readonly resetStore: boolean;
  /** Rows kept per history table. */
  readonly historyLimit: number;
  /** PostgreSQL shared by several replicas (--store / PORTOLAN_STORE_URL); absent: SQLite in dataDir only. */
  readonly storeUrl?: string;
  /** This replica's name in the shared store (--replica-id; default host-pid). */
  readonly replicaId?: string;
  /** How long an auto-registered VM's entry outlives its agent's connection (default 10 s). */
  readonly autoRegistrationGraceMs?: number;
  /** How Envoy normalizes request paths (Istio's meshConfig.pathNormalization); absent: the default. */
  readonly pathNormalization?: PathNormalization;
  /** All flags as given, for the registries' factories. */
  readonly flags: Readonly<Record<string, unknown>>;
  /** The built-in CA and secure xDS port (cli/ca-options.ts); absent when not run from the command line. */
  readonly ca?: CaServeOptions;
  /** What one client may hold (cli/limit-options.ts); absent when not run from the command line (the defaults apply). */
  readonly limits?: LimitOptions;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

const optionalStore = (
  url: string | undefined,
  replica: string | undefined,
): { storeUrl?: string; replicaId?: string } => ({
  ...(url !== undefined && { storeUrl: url }),
  ...(replica !== undefined && { replicaId: replicaId(replica) }),
});
const optionalCa = (ca: CaServeOptions | undefined): { ca?: CaServeOptions } => (ca ? { ca } : {});
const optionalLimits = (limits: LimitOptions | undefined): { limits?: LimitOptions } =>
  limits ? { limits } : {};

function pathNormalization(raw: string | undefined): PathNormalization {
  const level = (raw ?? DEFAULT_PATH_NORMALIZATION).toUpperCase();
  const known: readonly string[] = PATH_NORMALIZATION_LEVELS;
  if (!known.includes(level))
    throw new OptionError(`--path-normalization: one of ${PATH_NORMALIZATION_LEVELS.join(', ')}`);
  return level as PathNormalization;
}

export function compileServeOptions(raw: RawServeOptions): ServeOptions {
  const registries = raw.registries
    .split(',')
    .map((r) => r.trim().toLowerCase())
    .filter(Boolean);
  if (registries.length === 0) throw new OptionError('--registries: name at least one registry');
  const known = knownRegistries();
  for (const r of registries) {
    if (!known.includes(r)) {
      throw new OptionError(`--registries: unknown registry "${r}" (known: ${known.join(', ')})`);
    }
  }
  if (new Set(registries).size !== registries.length)
    throw new OptionError('--registries: a registry is named twice');
  if (!LOG_LEVELS.includes(raw.logLevel))
    throw new OptionError(`--log-level: one of ${LOG_LEVELS.join(', ')}`);
  return {
    registries,
    configDir: raw.configDir,
    dataDir: raw.dataDir,
    xdsAddr: parseAddress(raw.xdsAddr, '--xds-addr'),
    httpAddr: parseAddress(raw.httpAddr, '--http-addr'),
    logLevel: raw.logLevel as LevelWithSilent,
    pushWindowMs: parseDurationMs(raw.pushWindow, '--push-window'),
    pushMaxDelayMs: parseDurationMs(raw.pushMaxDelay, '--push-max-delay'),
    pushConcurrency: parsePositiveInt(raw.pushConcurrency, '--push-concurrency'),
    pushNewStreamsPerSecond: parsePositiveInt(raw.pushNewStreamsPerSecond, '--push-new-streams-per-second'),
    pushAdmissionMaxDelayMs: parseDurationMs(raw.pushAdmissionMaxDelay, '--push-admission-max-delay'),
    serveStale: raw.serveStale,
    resetStore: raw.resetStore,
    historyLimit: parsePositiveInt(raw.historyLimit, '--history-limit'),
    autoRegistrationGraceMs: parseDurationMs(raw.autoRegistrationGrace, '--auto-registration-grace'),
    pathNormalization: pathNormalization(raw.pathNormalization),
    flags: raw,
    ...optionalStore(storeUrl(raw.store), raw.replicaId),
    ...optionalCa(compileCaServeOptions(raw)),
    ...optionalLimits(compileLimitOptions(raw)),
  };
}
