// Workloads with identities from a real Portolan CA, for end-to-end tests of workload mTLS and
// authorization: `portolan cert`'s files per service account (what a gRPC bootstrap's `file_watcher`
// provider reads) and the proxyless gRPC bootstrap of such a workload.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CertificateAuthority } from '../../ca/authority.js';
import { createCsr } from '../../ca/certificates.js';
import { workloadIdentity } from '../../ca/identity.js';
import { generateKeyPair, privateKeyPem } from '../../ca/keys.js';
import { silentLogger } from '../../log/logger.js';
import { grpcCertificateProviders } from '../../mesh/workload-certs.js';
import { Store } from '../../store/store.js';
import { bootstrapFor } from './xds-client.js';

export class WorkloadCerts {
  private issued = 0;

  private constructor(
    private readonly dir: string,
    private readonly store: Store,
    private readonly ca: CertificateAuthority,
  ) {}

  /** A CA (trust domain cluster.local) whose store lives in `dir/data`; certificates go under `dir`. */
  static async open(dir: string): Promise<WorkloadCerts> {
    mkdirSync(join(dir, 'data'), { recursive: true });
    const store = Store.open({ dataDir: join(dir, 'data'), logger: silentLogger });
    const ca = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
    return new WorkloadCerts(dir, store, ca);
  }

  /** A new directory with `portolan cert`'s files for `namespace/serviceAccount`. */
  async certDir(serviceAccount: string, namespace = 'shop'): Promise<string> {
    const id = workloadIdentity('cluster.local', namespace, serviceAccount);
    const keys = await generateKeyPair('ec-p256');
    const { chain } = await this.ca.sign({ csrPem: await createCsr(keys, id), identity: id });
    const out = join(this.dir, `certs-${namespace}-${serviceAccount}-${++this.issued}`);
    mkdirSync(out);
    writeFileSync(join(out, 'root-cert.pem'), this.ca.trustBundle());
    writeFileSync(join(out, 'cert-chain.pem'), chain.slice(0, -1).join('\n'));
    writeFileSync(join(out, 'key.pem'), await privateKeyPem(keys.privateKey));
    return out;
  }

  close(): void {
    this.store.close();
  }
}

/** A proxyless gRPC workload's bootstrap: node `nodeId` in `namespace` with `labels`, certificates from `certs`. */
export function workloadBootstrap(
  xdsAddress: string,
  nodeId: string,
  certs: string,
  { namespace = 'shop', labels = {} }: { namespace?: string; labels?: Record<string, string> } = {},
): object {
  return {
    ...bootstrapFor(xdsAddress, nodeId),
    node: {
      id: nodeId,
      cluster: namespace,
      metadata: { NAMESPACE: namespace, LABELS: labels },
      locality: {},
    },
    certificate_providers: grpcCertificateProviders(certs),
  };
}

/** A free loopback port (XdsServer binds a port it is told, not 0). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const addr = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return typeof addr === 'object' && addr ? addr.port : 0;
}
