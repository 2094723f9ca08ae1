// The self-signed roots kept in the store (ca_material "roots"), with the rotation schedule: each
// root signs from `signingFrom` on, and stays in the trust bundle until `retireAt`. Each root's key
// is opened (decrypted, imported) once and kept in memory, so a signature costs a signature, not a
// scrypt; the parsed list and certificates are kept until the stored value changes. On the shared
// store (PostgreSQL, several replicas) the list is read into memory by reload() — at start, and by
// the secure port's refresh — so signing and the trust bundle never wait on the database.
import type { CaMaterialTable } from '../store/ca-material.js';
import type { SharedStore } from '../store/shared-store.js';
import { createRoot } from './certificates.js';
import { importSigningKey, privateKeyPem, type KeyAlgorithm } from './keys.js';
import { openKeyAsync, sealKey } from './key-protection.js';
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

/** Where the roots are kept: the embedded store's table (read live) or the shared store (cached). */
export type RootMaterial =
  CaMaterialTable | Pick<SharedStore, 'getMaterial' | 'getOrCreateMaterial' | 'replaceMaterial'>;

const isShared = (
  m: RootMaterial,
): m is Pick<SharedStore, 'getMaterial' | 'getOrCreateMaterial' | 'replaceMaterial'> => 'getMaterial' in m;

export class RootStore {
  /** The shared store's value as last read (reload()). */
  private cached: Buffer | undefined;
  private parsed: { readonly raw: string; readonly roots: readonly StoredRoot[] } | undefined;
  /** Opened key pairs by their stored text: one scrypt and one import per root, not per signature. */
  private readonly keys = new Map<string, Promise<CryptoKeyPair>>();
  private readonly certs = new Map<string, x509.X509Certificate>();

  constructor(
    private readonly material: RootMaterial,
    private readonly passphrase: string | undefined,
  ) {}

  list(): StoredRoot[] {
    const raw = this.fingerprint();
    if (this.parsed?.raw !== raw) {
      const roots = raw ? (JSON.parse(raw) as StoredRoot[]) : [];
      this.parsed = { raw, roots };
      // Forget the keys and certificates of roots that left the list.
      for (const key of this.keys.keys()) if (!roots.some((r) => r.key === key)) this.keys.delete(key);
      for (const pem of this.certs.keys()) if (!roots.some((r) => r.certPem === pem)) this.certs.delete(pem);
    }
    return [...this.parsed.roots];
  }

  /** The stored list as one string, to notice another process's rotation cheaply. */
  fingerprint(): string {
    return this.current()?.toString('utf8') ?? '';
  }

  /** Reads the shared store's list again (another replica's or `ca rotate`'s write); a no-op on the table. */
  async reload(): Promise<void> {
    if (isShared(this.material)) this.cached = (await this.material.getMaterial(MATERIAL)) ?? this.cached;
  }

  private current(): Buffer | undefined {
    return isShared(this.material) ? this.cached : this.material.get(MATERIAL);
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

  /**
   * Creates the first root if there is none. Written only if still absent, so two processes starting
   * on an empty store at once (`serve` and `ca root`) agree on one root: the one written first.
   */
  async ensure(trustDomain: string, algorithm: KeyAlgorithm, now = new Date()): Promise<void> {
    const material = this.material;
    if (isShared(material)) {
      // Under the store's lock: replicas starting at once create one root, and all load it.
      this.cached = await material.getOrCreateMaterial(MATERIAL, async () => {
        const root = await createRoot(trustDomain, algorithm, 3650, now);
        const value = JSON.stringify([await this.toStored(root.cert, root.keys.privateKey, now)]);
        return Buffer.from(value, 'utf8');
      });
      return;
    }
    if (this.list().length > 0) return;
    const root = await createRoot(trustDomain, algorithm, 3650, now);
    const value = JSON.stringify([await this.toStored(root.cert, root.keys.privateKey, now)]);
    if (!material.putIfAbsent(MATERIAL, Buffer.from(value, 'utf8')))
      throw new Error('could not write the CA roots to the store');
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
    await this.reload();
    const before = this.current();
    const roots = this.list();
    if (!before || roots.length === 0) throw new Error('no root to rotate: the CA has not been initialised');
    const switchAt = new Date(now.getTime() + overlapMs);
    const retireAt = new Date(switchAt.getTime() + maxTtlMs).toISOString();
    const root = await createRoot(trustDomain, algorithm, 3650, now);
    const next = { ...(await this.toStored(root.cert, root.keys.privateKey, switchAt)) };
    const kept = roots
      .filter((r) => !r.retireAt || new Date(r.retireAt) > now)
      .map((r) => (r.retireAt ? r : { ...r, retireAt }));
    // Only over the list this rotation read: two rotations at once must not drop each other's root.
    const value = Buffer.from(JSON.stringify([...kept, next]), 'utf8');
    const material = this.material;
    const replaced = isShared(material)
      ? await material.replaceMaterial(MATERIAL, before, value)
      : material.replace(MATERIAL, before, value);
    if (replaced) this.cached = value;
    else throw new Error('the CA roots changed while rotating (another `portolan ca rotate`?): run it again');
    return next;
  }

  /** The root that signs at `now`: the latest whose signingFrom has passed. */
  async signing(now = new Date()): Promise<ActiveRoot> {
    const candidates = this.list().filter((r) => new Date(r.signingFrom) <= now);
    const chosen = candidates[candidates.length - 1];
    if (!chosen) throw new Error('no CA root is active yet');
    return { cert: this.cert(chosen.certPem), keys: await this.openKeys(chosen.key) };
  }

  /** Every root still trusted at `now` (the bundle handed to workloads). */
  trusted(now = new Date()): x509.X509Certificate[] {
    return this.list()
      .filter((r) => !r.retireAt || new Date(r.retireAt) > now)
      .map((r) => this.cert(r.certPem));
  }

  private cert(pem: string): x509.X509Certificate {
    let cert = this.certs.get(pem);
    if (!cert) this.certs.set(pem, (cert = new x509.X509Certificate(pem)));
    return cert;
  }

  private openKeys(stored: string): Promise<CryptoKeyPair> {
    let keys = this.keys.get(stored);
    if (!keys) {
      keys = openKeyAsync(stored, this.passphrase).then(importSigningKey);
      this.keys.set(stored, keys);
      keys.catch(() => this.keys.delete(stored)); // a wrong passphrase is reported again next time
    }
    return keys;
  }

  private async toStored(cert: x509.X509Certificate, key: CryptoKey, signingFrom: Date): Promise<StoredRoot> {
    return {
      certPem: cert.toString('pem'),
      key: sealKey(await privateKeyPem(key), this.passphrase),
      signingFrom: signingFrom.toISOString(),
    };
  }
}
