// `portolan serve`'s raw flags and their defaults, apart from compiling them (options.ts): the other
// commands name the admin address's default without loading every registry's code.
import { DEFAULT_PATH_NORMALIZATION } from '../mesh/mesh-config.js';

/** The built-in flags; registries' own flags ride along as extra keys. */
export interface RawServeOptions {
  registries: string;
  configDir: string;
  dataDir: string;
  xdsAddr: string;
  httpAddr: string;
  logLevel: string;
  pushWindow: string;
  pushMaxDelay: string;
  pushConcurrency: string;
  pushNewStreamsPerSecond: string;
  pushAdmissionMaxDelay: string;
  serveStale: boolean;
  resetStore: boolean;
  historyLimit: string;
  autoRegistrationGrace: string;
  /** --path-normalization: one of PATH_NORMALIZATION_LEVELS (absent from tests' raw options: the default). */
  pathNormalization?: string;
  /** --store: PostgreSQL shared by replicas (cli/store-options.ts). */
  store?: string;
  replicaId?: string;
  [flag: string]: unknown;
}

export const SERVE_DEFAULTS: RawServeOptions = {
  registries: 'config',
  configDir: '/etc/portolan/config.d',
  dataDir: '/var/lib/portolan',
  xdsAddr: '127.0.0.1:15010',
  httpAddr: '127.0.0.1:15014',
  logLevel: 'info',
  pushWindow: '100ms',
  pushMaxDelay: '10s',
  pushConcurrency: '100',
  pushNewStreamsPerSecond: '1000',
  pushAdmissionMaxDelay: '50ms',
  serveStale: true,
  resetStore: false,
  historyLimit: '10000',
  autoRegistrationGrace: '10s',
  pathNormalization: DEFAULT_PATH_NORMALIZATION,
};
