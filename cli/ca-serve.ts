// The CA as part of `portolan serve`: opened from the store (or the plug-in directory) and served,
// with ADS, on the secure port.
import { CertificateAuthority } from '../ca/authority.js';
import { PASSPHRASE_ENV } from '../ca/key-protection.js';
import { CaSetupError } from '../ca/plugin-ca.js';
import { SecurePort, type SecureService } from '../ca/secure-server.js';
import type { Logger } from '../log/logger.js';
import type { Store } from '../store/store.js';
import type { CaServeOptions } from './ca-options.js';
import { OptionError, type HostAndPort } from './options.js';

export interface RunningCa {
  readonly ca: CertificateAuthority;
  readonly secureAddress: HostAndPort | undefined;
  stop(): Promise<void>;
}

export async function openCa(options: CaServeOptions, store: Store): Promise<CertificateAuthority> {
  try {
    return await CertificateAuthority.open({
      material: store.ca,
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
  store: Store,
  /** What the secure port serves besides the CA (the ADS server, with its streams authorized by certificate). */
  ads: SecureService,
  logger: Logger,
): Promise<RunningCa> {
  const ca = await openCa(options, store);
  const addr = options.secureXdsAddr;
  if (!addr) return { ca, secureAddress: undefined, stop: async () => {} };
  const port = await SecurePort.start({
    ca,
    tokens: store.joinTokens,
    services: [ads],
    ...(ads.serverOptions && { serverOptions: ads.serverOptions }),
    host: addr.host,
    port: addr.port,
    serverSans: options.serverSans,
    logger,
  });
  return { ca, secureAddress: { host: addr.host, port: port.port }, stop: () => port.stop() };
}
