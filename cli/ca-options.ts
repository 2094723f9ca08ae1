// `portolan serve` flags for the built-in CA and the secure xDS port, and their compiled form.
import { Option, type Command } from 'commander';
import { DurationError, parseDuration } from '../ca/duration.js';
import { IdentityError, validateTrustDomain } from '../ca/identity.js';
import { KEY_ALGORITHMS, type KeyAlgorithm } from '../ca/keys.js';
import type { RateLimit } from '../ca/rate-limit.js';
import { OptionError, parseAddress, type HostAndPort } from '../adapters/option-values.js';

export const CA_DEFAULTS = {
  secureXdsAddr: '0.0.0.0:15012',
  secureXdsSans: 'localhost,127.0.0.1',
  trustDomain: 'cluster.local',
  caKeyAlgorithm: 'ec-p256',
  caDefaultTtl: '24h',
  caMaxTtl: '24h',
  maxEnrollmentAge: '30d',
  caRateLimit: '60/1m',
} as const;

export interface CaServeOptions {
  /** undefined: `--secure-xds-addr off`, no secure port. */
  readonly secureXdsAddr: HostAndPort | undefined;
  readonly serverSans: readonly string[];
  readonly trustDomain: string;
  readonly pluginDir: string | undefined;
  readonly keyAlgorithm: KeyAlgorithm;
  readonly defaultTtlSeconds: number;
  readonly maxTtlSeconds: number;
  /** How long a chain of renewals may run before the workload must enroll again with a join token. */
  readonly maxEnrollmentAgeSeconds: number;
  /** CreateCertificate budget per peer address and per identity; null: `--ca-rate-limit off`. */
  readonly rateLimit: RateLimit | null;
  /** With --reset-store: start anew even if the CA's state cannot be carried over (a new root). */
  readonly resetCa: boolean;
}

export function addCaServeFlags(command: Command): void {
  command
    .option(
      '--secure-xds-addr <host:port>',
      'TLS port for the CA signing API and mutually authenticated ADS ("off" to disable)',
      CA_DEFAULTS.secureXdsAddr,
    )
    .option(
      '--secure-xds-sans <list>',
      'comma-separated DNS names and IPs in the secure port certificate',
      CA_DEFAULTS.secureXdsSans,
    )
    .option('--trust-domain <domain>', 'SPIFFE trust domain of workload identities', CA_DEFAULTS.trustDomain)
    .option('--ca-dir <dir>', "plug-in CA in Istio's cacerts layout instead of the self-signed root")
    .addOption(
      new Option('--ca-key-algorithm <alg>', 'key of a newly created self-signed root')
        .choices([...KEY_ALGORITHMS])
        .default(CA_DEFAULTS.caKeyAlgorithm),
    )
    .option(
      '--ca-default-ttl <duration>',
      'workload certificate lifetime when none is asked for',
      CA_DEFAULTS.caDefaultTtl,
    )
    .option(
      '--ca-max-ttl <duration>',
      'longest workload certificate lifetime granted (longer is refused)',
      CA_DEFAULTS.caMaxTtl,
    )
    .option(
      '--max-enrollment-age <duration>',
      'how long a chain of renewals may run from its join token; then the workload must enroll again',
      CA_DEFAULTS.maxEnrollmentAge,
    )
    .option(
      '--ca-rate-limit <n/duration>',
      'certificate requests allowed per peer address and per identity, e.g. 60/1m ("off": unlimited); beyond it RESOURCE_EXHAUSTED',
      CA_DEFAULTS.caRateLimit,
    )
    .option(
      '--reset-ca',
      "with --reset-store: start anew even when the CA's root keys, tokens and enrollments cannot be carried over (a new root)",
    );
}

/** `N/DURATION` (e.g. 60/1m) or `off`. */
export function parseRateLimit(text: string, what: string): RateLimit | null {
  if (text.trim() === 'off') return null;
  const m = /^\s*(\d+)\s*\/\s*(\S+)\s*$/.exec(text);
  const limit = Number(m?.[1]);
  if (!m?.[2] || !Number.isSafeInteger(limit) || limit < 1)
    throw new OptionError(`${what}: expected N/DURATION like 60/1m, or off; got "${text}"`);
  return { limit, perMs: parseDuration(m[2], what) };
}

export function compileCaServeOptions(raw: Readonly<Record<string, unknown>>): CaServeOptions | undefined {
  const str = (key: keyof typeof CA_DEFAULTS): string => {
    const v = raw[key];
    return typeof v === 'string' ? v : CA_DEFAULTS[key];
  };
  if (typeof raw.secureXdsAddr !== 'string') return undefined; // not from the command line: no CA
  try {
    const defaultTtlSeconds = parseDuration(str('caDefaultTtl'), '--ca-default-ttl') / 1000;
    const maxTtlSeconds = parseDuration(str('caMaxTtl'), '--ca-max-ttl') / 1000;
    if (defaultTtlSeconds > maxTtlSeconds)
      throw new OptionError('--ca-default-ttl: longer than --ca-max-ttl');
    const maxEnrollmentAgeSeconds = parseDuration(str('maxEnrollmentAge'), '--max-enrollment-age') / 1000;
    const rateLimit = parseRateLimit(str('caRateLimit'), '--ca-rate-limit');
    const keyAlgorithm = str('caKeyAlgorithm');
    if (!(KEY_ALGORITHMS as readonly string[]).includes(keyAlgorithm))
      throw new OptionError(`--ca-key-algorithm: one of ${KEY_ALGORITHMS.join(', ')}`);
    const addr = str('secureXdsAddr');
    return {
      secureXdsAddr: addr === 'off' ? undefined : parseAddress(addr, '--secure-xds-addr'),
      serverSans: str('secureXdsSans')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      trustDomain: validateTrustDomain(str('trustDomain')),
      pluginDir: typeof raw.caDir === 'string' && raw.caDir ? raw.caDir : undefined,
      keyAlgorithm: keyAlgorithm as KeyAlgorithm,
      defaultTtlSeconds,
      maxTtlSeconds,
      maxEnrollmentAgeSeconds,
      rateLimit,
      resetCa: raw.resetCa === true,
    };
  } catch (err) {
    if (err instanceof DurationError || err instanceof IdentityError) throw new OptionError(err.message);
    throw err;
  }
}
