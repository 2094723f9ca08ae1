// A grpc-js certificate provider fed from memory: the secure port's trust bundle and its own
// certificate, replaced in place (new handshakes use them; open connections are unaffected).
import type { experimental } from '@grpc/grpc-js';

type CaListener = experimental.CaCertificateUpdateListener;
type IdentityListener = experimental.IdentityCertificateUpdateListener;

export class ReloadableCertificates implements experimental.CertificateProvider {
  private ca: experimental.CaCertificateUpdate | null = null;
  private identity: experimental.IdentityCertificateUpdate | null = null;
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();

  update(bundlePem: string, certChainPem: string, keyPem: string): void {
    this.ca = { caCertificate: Buffer.from(bundlePem) };
    this.identity = { certificate: Buffer.from(certChainPem), privateKey: Buffer.from(keyPem) };
    for (const l of this.caListeners) l(this.ca);
    for (const l of this.identityListeners) l(this.identity);
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    // grpc-js adds its own watcher only after this returns; a synchronous call would go unheard.
    queueMicrotask(() => this.ca && listener(this.ca));
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    queueMicrotask(() => this.identity && listener(this.identity));
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
  }
}
