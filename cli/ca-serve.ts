// The CA as part of `portolan serve`: opened from the store (or the plug-in directory) and served,
// with ADS, on the secure port.
import { CertificateAuthority, type CaMaterial } from '../ca/authority.js';
import type { CaStore } from '../ca/ca-store.js';
import { PASSPHRASE_ENV } from '../ca/key-protection.js';
import { CaSetupError } from '../ca/plugin-ca.js';
import { SecurePort, type SecureService } from '../ca/secure-server.js';
import type { Logger } from '../log/logger.js';
import type { CaServeOptions } from './ca-options.js';
import { OptionError, type HostAndPort } from '../adapters/option-values.js';

export interface RunningCa {
  readonly ca: CertificateAuthority;
  readonly secureAddress: HostAndPort | undefined;
  stop(): Promise<void>;
}

/** Where the CA keeps its state: the embedded store's tables, or the shared store of all replicas. */
export interface CaBacking {
  readonly material: CaMaterial;
  readonly store: CaStore;
  /** Whether this replica runs the singleton jobs (pruning). */
  readonly leads?: () => boolean;
}

export async function openCa(options: CaServeOptions, material: CaMaterial): Promise<CertificateAuthority> {
  try {
    return await CertificateAuthority.open({
      material,
      trustDomain: options.trustDomain,
      keyAlgorithm: options.keyAlgorithm,
      pluginDir: options.pluginDir,
      passphrase: process.env[PASSPHRASE_ENV] || undefined,
      defaultTtlSeconds: options.defaultTtlSeconds,
      maxTtlSeconds: options.maxTtlSeconds,
    });
  } catch (err) {
    if (err instanceof CaSetupError) throw new OptionError(err.message);
    throw err;
  }
}

export async function startCa(
  options: CaServeOptions,
  backing: CaBacking,
  /** What the secure port serves besides the CA (the ADS server, with its streams authorized by certificate). */
  ads: SecureService,
  logger: Logger,
): Promise<RunningCa> {
  const ca = await openCa(options, backing.material);
  const addr = options.secureXdsAddr;
  if (!addr) return { ca, secureAddress: undefined, stop: async () => {} };
  const port = await SecurePort.start({
    ca,
    store: backing.store,
    ...(backing.leads && { leads: backing.leads }),
    maxEnrollmentAgeSeconds: options.maxEnrollmentAgeSeconds,
    rateLimit: options.rateLimit,
    services: [ads],
    ...(ads.serverOptions && { serverOptions: ads.serverOptions }),
    host: addr.host,
    port: addr.port,
    serverSans: options.serverSans,
    logger,
  });
  return { ca, secureAddress: { host: addr.host, port: port.port }, stop: () => port.stop() };
}
