// The self-signed roots kept in the store (ca_material "roots"), with the rotation schedule: each
// root signs from `signingFrom` on, and stays in the trust bundle until `retireAt`.
import type { CaMaterialTable } from '../store/ca-material.js';
import { createRoot } from './certificates.js';
import { importSigningKey, privateKeyPem, type KeyAlgorithm } from './keys.js';
import { openKey, sealKey } from './key-protection.js';
import { x509, type CryptoKey, type CryptoKeyPair } from './x509.js';

const MATERIAL = 'roots';

export interface StoredRoot {
  readonly certPem: string;
  /** PEM, or sealed JSON (key-protection.ts). */
  readonly key: string;
  readonly signingFrom: string;
  readonly retireAt?: string;
}

export interface ActiveRoot {
  readonly cert: x509.X509Certificate;
  readonly keys: CryptoKeyPair;
}

export class RootStore {
  constructor(
    private readonly material: CaMaterialTable,
    private readonly passphrase: string | undefined,
  ) {}

  list(): StoredRoot[] {
    const raw = this.material.get(MATERIAL);
    return raw ? (JSON.parse(raw.toString('utf8')) as StoredRoot[]) : [];
  }

  /** The stored list as one string, to notice another process's rotation cheaply. */
  fingerprint(): string {
    return this.material.get(MATERIAL)?.toString('utf8') ?? '';
  }

  /**
   * Changes whenever what the CA does changes: a rotation (another process may write it), the new
   * root's switch to signing, and an old root's retirement. The stored list only grows or shrinks by
   * a write, and for a given list the signing count only grows and the trusted count only shrinks.
   */
  state(now = new Date()): string {
    const roots = this.list();
    const signing = roots.filter((r) => new Date(r.signingFrom) <= now).length;
    const trusted = roots.filter((r) => !r.retireAt || new Date(r.retireAt) > now).length;
    return `${this.fingerprint()}|${signing}|${trusted}`;
  }

  /** Creates the first root if there is none. */
  async ensure(trustDomain: string, algorithm: KeyAlgorithm, now = new Date()): Promise<void> {
    if (this.list().length > 0) return;
    const root = await createRoot(trustDomain, algorithm, 3650, now);
    this.save([await this.toStored(root.cert, root.keys.privateKey, now)]);
  }

  /**
   * Adds a new root that starts signing after `overlapMs`; the current roots stay trusted until the
   * certificates they signed before the switch have expired (`overlapMs + maxTtlMs`).
   */
  async rotate(
    trustDomain: string,
    algorithm: KeyAlgorithm,
    overlapMs: number,
    maxTtlMs: number,
    now = new Date(),
  ): Promise<StoredRoot> {
    const roots = this.list();
    if (roots.length === 0) throw new Error('no root to rotate: the CA has not been initialised');
    const switchAt = new Date(now.getTime() + overlapMs);
    const retireAt = new Date(switchAt.getTime() + maxTtlMs).toISOString();
    const root = await createRoot(trustDomain, algorithm, 3650, now);
    const next = { ...(await this.toStored(root.cert, root.keys.privateKey, switchAt)) };
    const kept = roots
      .filter((r) => !r.retireAt || new Date(r.retireAt) > now)
      .map((r) => (r.retireAt ? r : { ...r, retireAt }));
    this.save([...kept, next]);
    return next;
  }

  /** The root that signs at `now`: the latest whose signingFrom has passed. */
  async signing(now = new Date()): Promise<ActiveRoot> {
    const candidates = this.list().filter((r) => new Date(r.signingFrom) <= now);
    const chosen = candidates[candidates.length - 1];
    if (!chosen) throw new Error('no CA root is active yet');
    return {
      cert: new x509.X509Certificate(chosen.certPem),
      keys: await importSigningKey(openKey(chosen.key, this.passphrase)),
    };
  }

  /** Every root still trusted at `now` (the bundle handed to workloads). */
  trusted(now = new Date()): x509.X509Certificate[] {
    return this.list()
      .filter((r) => !r.retireAt || new Date(r.retireAt) > now)
      .map((r) => new x509.X509Certificate(r.certPem));
  }

  private async toStored(cert: x509.X509Certificate, key: CryptoKey, signingFrom: Date): Promise<StoredRoot> {
    return {
      certPem: cert.toString('pem'),
      key: sealKey(await privateKeyPem(key), this.passphrase),
      signingFrom: signingFrom.toISOString(),
    };
  }

  private save(roots: readonly StoredRoot[]): void {
    if (!this.material.put(MATERIAL, Buffer.from(JSON.stringify(roots), 'utf8')))
      throw new Error('could not write the CA roots to the store');
  }
}
