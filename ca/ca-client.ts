// A client of the signing API: one CreateCertificate call over TLS, authenticated by a join token
// or by the workload's current certificate. The server also returns its trust bundle (every root
// workloads must trust, both during a rotation) in the `portolan-trust-bundle-bin` response header.
// The server must prove it is the control plane (ca/control-plane-check.ts) before anything is sent.
import * as grpc from '@grpc/grpc-js';
import { controlPlaneAddresses } from './control-plane-addresses.js';
import { controlPlaneCheck, ServerIdentityError } from './control-plane-check.js';
import {
  CREATE_CERTIFICATE_PATH,
  decodeCertificateResponse,
  encodeCertificateRequest,
} from './certificate-messages.js';

export const TRUST_BUNDLE_HEADER = 'portolan-trust-bundle-bin';

export interface CertificateCall {
  /** HOST:PORT, or several comma-separated (replicas): tried in order while one is unreachable. */
  readonly address: string;
  /** Roots that the CA's server certificate must chain to. */
  readonly rootPem: string;
  readonly csrPem: string;
  readonly ttlSeconds?: number;
  readonly token?: string;
  /** The current certificate, for renewal over mTLS. */
  readonly current?: { readonly certChainPem: string; readonly keyPem: string };
  readonly timeoutMs?: number;
  /** The mesh's trust domain: the server must carry the control plane's identity in it. */
  readonly trustDomain?: string;
}

export interface CertificateResult {
  /** Leaf first, root last. */
  readonly certChain: string[];
  /** The CA's trust bundle, when it sent one. */
  readonly trustBundle?: string;
}

const identity = (b: Buffer): Buffer => b;

export async function requestCertificate(req: CertificateCall): Promise<CertificateResult> {
  const addresses = controlPlaneAddresses(req.address);
  let lastError: unknown = new Error(`no CA address in "${req.address}"`);
  for (const address of addresses) {
    try {
      return await requestFrom(address, req);
    } catch (err) {
      // Unreachable, not proving itself, or refusing enrollments while its database is down: the
      // next replica may answer. Anything else is the CA's answer, the same on every replica.
      const unavailable = (err as { code?: unknown }).code === grpc.status.UNAVAILABLE;
      if (!unavailable && !(err instanceof ServerIdentityError)) throw err;
      lastError = err;
    }
  }
  throw lastError;
}

async function requestFrom(address: string, req: CertificateCall): Promise<CertificateResult> {
  const check = controlPlaneCheck(address, req.trustDomain);
  const creds = grpc.credentials.createSsl(
    Buffer.from(req.rootPem),
    req.current ? Buffer.from(req.current.keyPem) : null,
    req.current ? Buffer.from(req.current.certChainPem) : null,
    { checkServerIdentity: check.checkServerIdentity },
  );
  const client = new grpc.Client(address, creds, check.channelOptions);
  const metadata = new grpc.Metadata();
  if (req.token) metadata.set('authorization', `Bearer ${req.token}`);
  try {
    return await new Promise<CertificateResult>((resolve, reject) => {
      let bundle: string | undefined;
      const call = client.makeUnaryRequest(
        CREATE_CERTIFICATE_PATH,
        identity,
        identity,
        encodeCertificateRequest({ csr: req.csrPem, validityDuration: req.ttlSeconds ?? 0 }),
        metadata,
        { deadline: Date.now() + (req.timeoutMs ?? 10_000) },
        (err, bytes) => {
          // A refused server certificate surfaces as UNAVAILABLE; say what was wrong with it.
          if (err?.code === grpc.status.UNAVAILABLE) return reject(check.lastFailure() ?? err);
          if (err || !bytes) return reject(err ?? new Error('empty response'));
          const { certChain } = decodeCertificateResponse(bytes);
          resolve({ certChain, ...(bundle && { trustBundle: bundle }) });
        },
      );
      call.on('metadata', (md: grpc.Metadata) => {
        const value = md.get(TRUST_BUNDLE_HEADER)[0];
        if (Buffer.isBuffer(value)) bundle = value.toString('utf8');
      });
    });
  } finally {
    client.close();
  }
}
