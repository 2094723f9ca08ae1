// istio.v1.auth.IstioCertificateService/CreateCertificate on the secure port. The caller proves its
// identity with its current certificate (renewal, mTLS) or, for the first certificate, a join token
// in `authorization: Bearer TOKEN`; the CSR must be for exactly that identity.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../log/logger.js';
import type { JoinTokenTable } from '../store/join-tokens.js';
import { CaRequestError, type CertificateAuthority } from './authority.js';
import { TRUST_BUNDLE_HEADER } from './ca-client.js';
import {
  CREATE_CERTIFICATE_PATH,
  decodeCertificateRequest,
  encodeCertificateResponse,
  type CertificateRequest,
} from './certificate-messages.js';
import { hashToken, redeemJoinToken, TokenError } from './join-tokens.js';
import { peerIdentity } from './peer-identity.js';

const identity = (b: Buffer): Buffer => b;

const SERVICE: grpc.ServiceDefinition = {
  CreateCertificate: {
    path: CREATE_CERTIFICATE_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

export interface CertificateServiceDeps {
  readonly ca: CertificateAuthority;
  readonly tokens: JoinTokenTable;
  readonly logger: Logger;
}

interface Caller {
  readonly identity: string;
  readonly via: string;
  /** Set when a join token use was spent, to give it back if the request is refused. */
  readonly tokenHash?: string;
}

class Refusal extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

export function registerCertificateService(server: grpc.Server, deps: CertificateServiceDeps): void {
  server.addService(SERVICE, {
    CreateCertificate: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      createCertificate(call, deps).then(
        (bytes) => {
          const md = new grpc.Metadata();
          md.set(TRUST_BUNDLE_HEADER, Buffer.from(deps.ca.trustBundle()));
          call.sendMetadata(md);
          callback(null, bytes);
        },
        (err: unknown) => {
          const code = err instanceof Refusal ? err.code : grpc.status.INTERNAL;
          const details = err instanceof Error ? err.message : String(err);
          deps.logger.warn({ peer: call.getPeer(), code, details }, 'certificate request refused');
          callback({ code, details });
        },
      );
    },
  });
}

async function createCertificate(
  call: grpc.ServerUnaryCall<Buffer, Buffer>,
  deps: CertificateServiceDeps,
): Promise<Buffer> {
  let req: CertificateRequest;
  try {
    req = decodeCertificateRequest(call.request);
  } catch (err) {
    throw new Refusal(grpc.status.INVALID_ARGUMENT, `malformed request: ${(err as Error).message}`);
  }
  const caller = authenticate(call, deps);
  try {
    const { chain, cert } = await deps.ca.sign({
      csrPem: req.csr,
      identity: caller.identity,
      ttlSeconds: req.validityDuration,
    });
    deps.logger.info(
      { identity: caller.identity, via: caller.via, serial: cert.serialNumber, notAfter: cert.notAfter },
      'certificate issued',
    );
    return encodeCertificateResponse({ certChain: chain });
  } catch (err) {
    if (caller.tokenHash) deps.tokens.refund(caller.tokenHash);
    if (err instanceof CaRequestError)
      throw new Refusal(
        err.kind === 'invalid' ? grpc.status.INVALID_ARGUMENT : grpc.status.PERMISSION_DENIED,
        err.message,
      );
    throw err;
  }
}

function authenticate(call: grpc.ServerUnaryCall<Buffer, Buffer>, deps: CertificateServiceDeps): Caller {
  const peer = peerIdentity(call, deps.ca.trustDomain);
  if (peer.ok) return { identity: peer.identity, via: `certificate ${peer.serial}` };
  const header = call.metadata.get('authorization')[0];
  const token = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;
  if (!token)
    throw new Refusal(
      grpc.status.UNAUTHENTICATED,
      `present a valid workload certificate or a join token (authorization: Bearer TOKEN): ${peer.reason}`,
    );
  try {
    return { identity: redeemJoinToken(deps.tokens, token), via: 'join token', tokenHash: hashToken(token) };
  } catch (err) {
    if (err instanceof TokenError) throw new Refusal(grpc.status.UNAUTHENTICATED, err.message);
    throw err;
  }
}
