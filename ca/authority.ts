// The certificate authority: signs workload CSRs for an authenticated SPIFFE identity, with either
// the self-signed roots kept in the store or a plug-in CA from an Istio `cacerts` directory.
import type { IssuedCertificate } from '../store/ca-material.js';
import type { SharedStore } from '../store/shared-store.js';
import { issueLeaf, randomSerial, sanEntries } from './certificates.js';
import { checkWorkloadKey } from './csr-policy.js';
import { isControlPlaneIdentity, parseSpiffeUri } from './identity.js';
import { generateKeyPair, privateKeyPem, type KeyAlgorithm } from './keys.js';
import { loadPluginCa, type PluginCa } from './plugin-ca.js';
import { RootStore, type RootMaterial } from './root-store.js';
import { x509, type CryptoKey } from './x509.js';

/** The roots and the issuance log: the embedded store's table, or the shared store (PostgreSQL). */
export type CaMaterial =
  | (RootMaterial & {
      recordIssued(c: IssuedCertificate): void;
      issuedBySerial(s: string): IssuedCertificate | undefined;
    })
  | Pick<
      SharedStore,
      'getMaterial' | 'getOrCreateMaterial' | 'replaceMaterial' | 'recordIssued' | 'issuedBySerial'
    >;

/** Issued certificates not yet logged because the shared store was unreachable, kept at most this many. */
const MAX_UNLOGGED = 10_000;

export interface CaOptions {
  readonly material: CaMaterial;
  readonly trustDomain: string;
  readonly keyAlgorithm?: KeyAlgorithm;
  /** An Istio `cacerts` directory; when set, the stored roots are not used. */
  readonly pluginDir?: string;
  readonly passphrase?: string;
  readonly defaultTtlSeconds?: number;
  readonly maxTtlSeconds?: number;
  /** How far NotBefore is backdated, for workloads whose clocks run behind. */
  readonly backdateSeconds?: number;
  /**
   * The CA's clock (default: the system's): what it signs, trusts and reports at each moment of a
   * rotation. Tests move it to step through a rotation's phases.
   */
  readonly now?: () => Date;
}

/** A request the CA refuses; `reason` says why, `kind` maps to a gRPC status. */
export class CaRequestError extends Error {
  constructor(
    readonly kind: 'invalid' | 'denied',
    message: string,
  ) {
    super(message);
  }
}

export interface SignRequest {
  readonly csrPem: string;
  /** The caller's authenticated SPIFFE URI (from a join token or its current certificate). */
  readonly identity: string;
  /** 0 or absent: the default TTL. */
  readonly ttlSeconds?: number;
  readonly nodeId?: string;
  /** The enrollment the certificate belongs to (recorded in the issuance log). */
  readonly enrollmentId?: string;
  /** No later expiry than this, whatever the TTL (the end of the enrollment). */
  readonly notAfterLimit?: Date;
}

export interface ServerCertificate {
  readonly certChainPem: string;
  readonly keyPem: string;
  readonly notAfter: Date;
}

interface Signer {
  readonly cert: x509.X509Certificate;
  readonly key: CryptoKey;
  /** Signing certificate up to the root, for the response chain. */
  readonly chain: readonly x509.X509Certificate[];
}

export class CertificateAuthority {
  readonly defaultTtlSeconds: number;
  readonly maxTtlSeconds: number;
  /** The CA's clock: every `now` parameter below defaults to it. */
  readonly now: () => Date;
  private readonly backdateMs: number;
  /** Issuance-log entries the shared store could not take yet (it was unreachable): written at the next chance. */
  private readonly unlogged: IssuedCertificate[] = [];

  private constructor(
    private readonly options: CaOptions,
    private readonly roots: RootStore | undefined,
    private readonly plugin: PluginCa | undefined,
  ) {
    this.defaultTtlSeconds = options.defaultTtlSeconds ?? 24 * 3600;
    this.maxTtlSeconds = options.maxTtlSeconds ?? 24 * 3600;
    this.backdateMs = (options.backdateSeconds ?? 300) * 1000;
    this.now = options.now ?? (() => new Date());
    if (this.defaultTtlSeconds > this.maxTtlSeconds)
      throw new Error('the default certificate TTL is above the maximum');
  }

  /** Loads the plug-in CA, or the stored roots (creating the first on first start). */
  static async open(options: CaOptions): Promise<CertificateAuthority> {
    if (options.pluginDir) {
      return new CertificateAuthority(options, undefined, await loadPluginCa(options.pluginDir));
    }
    const roots = new RootStore(options.material, options.passphrase);
    await roots.ensure(options.trustDomain, options.keyAlgorithm ?? 'ec-p256', options.now?.());
    const ca = new CertificateAuthority(options, roots, undefined);
    await ca.signer(); // a key that cannot be opened (wrong passphrase) fails now, not at first CSR
    return ca;
  }

  /** Reads the roots again from the shared store (another replica's rotation); throws when unreachable. */
  async reloadRoots(): Promise<void> {
    await this.roots?.reload();
  }

  get trustDomain(): string {
    return this.options.trustDomain;
  }

  get isPlugin(): boolean {
    return this.plugin !== undefined;
  }

  /** The roots workloads must trust, as PEM: during a rotation both the old and the new root. */
  trustBundle(now = this.now()): string {
    return this.trustedRoots(now)
      .map((c) => c.toString('pem'))
      .join('\n');
  }

  trustedRoots(now = this.now()): x509.X509Certificate[] {
    return this.plugin ? [...this.plugin.roots] : (this.roots?.trusted(now) ?? []);
  }

  /** Certificates that may have signed a peer's leaf: the roots, and a plug-in CA's own certificate. */
  issuers(now = this.now()): x509.X509Certificate[] {
    return this.plugin ? [...this.plugin.chain, ...this.plugin.roots] : this.trustedRoots(now);
  }

  /**
   * Something that changes when the roots do: a rotation by `portolan ca rotate` in another process,
   * the new root's switch to signing, and the old root's retirement from the bundle.
   */
  version(now = this.now()): string {
    return this.roots?.state(now) ?? 'plugin';
  }

  /** Signs a workload CSR; returns the chain leaf first, root last. */
  async sign(req: SignRequest, now = this.now()): Promise<{ chain: string[]; cert: x509.X509Certificate }> {
    const ttl = req.ttlSeconds && req.ttlSeconds > 0 ? req.ttlSeconds : this.defaultTtlSeconds;
    if (ttl > this.maxTtlSeconds)
      throw new CaRequestError(
        'invalid',
        `requested validity ${ttl}s is above the maximum of ${this.maxTtlSeconds}s`,
      );
    const identity = parseSpiffeUri(req.identity);
    if (!identity || identity.trustDomain !== this.trustDomain)
      throw new CaRequestError(
        'denied',
        `identity ${req.identity} is not in trust domain ${this.trustDomain}`,
      );
    if (isControlPlaneIdentity(req.identity))
      throw new CaRequestError(
        'denied',
        `${req.identity} is the control plane's identity, never a workload's`,
      );
    let csr: x509.Pkcs10CertificateRequest;
    try {
      csr = new x509.Pkcs10CertificateRequest(req.csrPem);
    } catch (err) {
      throw new CaRequestError('invalid', `csr is not a PEM PKCS#10 request: ${(err as Error).message}`);
    }
    const keyProblem = checkWorkloadKey(csr.publicKey.rawData);
    if (keyProblem) throw new CaRequestError('invalid', keyProblem);
    if (!(await csr.verify())) throw new CaRequestError('invalid', 'csr signature does not verify');
    const sans = sanEntries(csr.extensions);
    const wanted = `url:${req.identity}`;
    if (sans.length !== 1 || sans[0] !== wanted)
      throw new CaRequestError(
        'denied',
        `csr SANs [${sans.join(', ')}] must be exactly the caller's identity ${req.identity}`,
      );
    const signer = await this.signer(now);
    const notAfter = new Date(
      Math.min(
        now.getTime() + ttl * 1000,
        signer.cert.notAfter.getTime(),
        req.notAfterLimit?.getTime() ?? Number.POSITIVE_INFINITY,
      ),
    );
    if (notAfter <= now) throw new CaRequestError('denied', 'the enrollment has ended: enroll again');
    const serial = randomSerial();
    const cert = await issueLeaf({
      issuer: signer.cert,
      issuerKey: signer.key,
      publicKey: csr.publicKey,
      uris: [req.identity],
      notBefore: new Date(now.getTime() - this.backdateMs),
      notAfter,
      serial,
    });
    await this.log({
      serial,
      identity: req.identity,
      nodeId: req.nodeId ?? null,
      enrollmentId: req.enrollmentId ?? null,
      notBefore: cert.notBefore.toISOString(),
      notAfter: cert.notAfter.toISOString(),
      issuedAt: now.toISOString(),
    });
    return { cert, chain: [cert, ...signer.chain].map((c) => c.toString('pem')) };
  }

  /**
   * Writes the issuance-log entry. On the shared store a renewal may be signed while the database
   * is unreachable (from what this replica cached): its entry waits in memory and is written with
   * the next one that gets through, so the log catches up when the database returns.
   */
  private async log(entry: IssuedCertificate): Promise<void> {
    const material = this.options.material;
    if (!isAsyncLog(material)) {
      material.recordIssued(entry);
      return;
    }
    this.unlogged.push(entry);
    if (this.unlogged.length > MAX_UNLOGGED) this.unlogged.shift();
    while (this.unlogged.length > 0) {
      const next = this.unlogged[0];
      if (!next) break;
      try {
        await material.recordIssued(next);
      } catch {
        return; // unreachable: kept for the next time
      }
      this.unlogged.shift();
    }
  }

  /**
   * A certificate for the secure xDS port itself: the given DNS names and IPs, and `uris` (the
   * control plane's identity, which sign() never gives a workload).
   */
  async issueServerCertificate(
    dnsNames: readonly string[],
    ips: readonly string[],
    ttlSeconds = this.defaultTtlSeconds,
    now = this.now(),
    uris: readonly string[] = [],
  ): Promise<ServerCertificate> {
    const keys = await generateKeyPair('ec-p256');
    const signer = await this.signer(now);
    const cert = await issueLeaf({
      issuer: signer.cert,
      issuerKey: signer.key,
      publicKey: await x509.PublicKey.create(keys.publicKey),
      uris,
      dnsNames,
      ips,
      notBefore: new Date(now.getTime() - this.backdateMs),
      notAfter: new Date(Math.min(now.getTime() + ttlSeconds * 1000, signer.cert.notAfter.getTime())),
      serial: randomSerial(),
    });
    return {
      certChainPem: [cert, ...signer.chain.slice(0, -1)].map((c) => c.toString('pem')).join('\n'),
      keyPem: await privateKeyPem(keys.privateKey),
      notAfter: cert.notAfter,
    };
  }

  private async signer(now = this.now()): Promise<Signer> {
    if (this.plugin) {
      return {
        cert: this.plugin.signingCert,
        key: this.plugin.signingKeys.privateKey,
        chain: this.plugin.chain,
      };
    }
    if (!this.roots) throw new Error('CA has no roots');
    const active = await this.roots.signing(now);
    return { cert: active.cert, key: active.keys.privateKey, chain: [active.cert] };
  }
}

function isAsyncLog(
  m: CaMaterial,
): m is Pick<
  SharedStore,
  'getMaterial' | 'getOrCreateMaterial' | 'replaceMaterial' | 'recordIssued' | 'issuedBySerial'
> {
  return 'getOrCreateMaterial' in m;
}
