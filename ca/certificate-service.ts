// istio.v1.auth.IstioCertificateService/CreateCertificate on the secure port. The caller proves its
// identity with its current certificate (renewal, mTLS) or, for the first certificate, a join token
// in `authorization: Bearer TOKEN`; the CSR must be for exactly that identity. A token starts an
// enrollment, a certificate continues its own (ca/enrollments.ts) unless it or its enrollment was
// revoked or the enrollment is too old. Each peer address and each identity has a request budget.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../log/logger.js';
import { CaRequestError, type CertificateAuthority } from './authority.js';
import { TRUST_BUNDLE_HEADER } from './ca-client.js';
import {
  CREATE_CERTIFICATE_PATH,
  decodeCertificateRequest,
  encodeCertificateResponse,
  type CertificateRequest,
} from './certificate-messages.js';
import { StoreUnavailable, type CaStore } from './ca-store.js';
import { EnrollmentRefused, type Enrollment, type Enrollments } from './enrollments.js';
import { hashToken, redeemJoinToken, tokenId, TokenError } from './join-tokens.js';
import { peerIdentity } from './peer-identity.js';
import { peerAddress, type KeyedRateLimiter } from './rate-limit.js';
import type { RevocationList } from './revocation.js';

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
  readonly tokens: Pick<CaStore, 'consumeJoinToken' | 'findJoinToken' | 'refundJoinToken'>;
  readonly enrollments: Enrollments;
  readonly revocations: RevocationList;
  /** Request budgets per peer address and per identity; none: unlimited. */
  readonly rateLimits?: { readonly peer: KeyedRateLimiter; readonly identity: KeyedRateLimiter };
  readonly logger: Logger;
}

type Caller =
  | {
      readonly identity: string;
      readonly via: 'join token';
      readonly tokenId: string;
      /** To give the use back if the request is refused. */
      readonly tokenHash: string;
    }
  | { readonly identity: string; readonly via: 'certificate'; readonly serial: string };

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
  const peer = peerAddress(call.getPeer());
  spend(deps.rateLimits?.peer, peer, `peer ${peer}`);
  let req: CertificateRequest;
  try {
    req = decodeCertificateRequest(call.request);
  } catch (err) {
    throw new Refusal(grpc.status.INVALID_ARGUMENT, `malformed request: ${(err as Error).message}`);
  }
  const caller = await authenticate(call, deps);
  let enrollment: Enrollment | undefined;
  try {
    spend(deps.rateLimits?.identity, caller.identity, caller.identity);
    const now = deps.ca.now();
    enrollment =
      caller.via === 'join token'
        ? await deps.enrollments.begin(caller.identity, caller.tokenId, now)
        : await deps.enrollments.continueFrom(caller.serial, caller.identity, now);
    const { chain, cert } = await deps.ca.sign(
      {
        csrPem: req.csr,
        identity: caller.identity,
        ttlSeconds: req.validityDuration,
        enrollmentId: enrollment.id,
        notAfterLimit: enrollment.endsAt,
      },
      now,
    );
    // A revocation that landed while this request was being signed wins.
    if (await deps.enrollments.isRevoked(enrollment.id))
      throw new EnrollmentRefused(`enrollment ${enrollment.id} was revoked`);
    deps.enrollments.issued(cert.serialNumber, enrollment.id);
    deps.logger.info(
      {
        identity: caller.identity,
        via: caller.via === 'certificate' ? `certificate ${caller.serial}` : caller.via,
        enrollment: enrollment.id,
        serial: cert.serialNumber,
        notAfter: cert.notAfter,
      },
      'certificate issued',
    );
    return encodeCertificateResponse({ certChain: chain });
  } catch (err) {
    if (caller.via === 'join token')
      await deps.tokens
        .refundJoinToken(caller.tokenHash)
        .catch((refundErr: unknown) =>
          deps.logger.warn({ err: refundErr, token: caller.tokenId }, 'join token use not given back'),
        );
    if (enrollment) await deps.enrollments.abandon(enrollment);
    if (err instanceof StoreUnavailable) throw new Refusal(grpc.status.UNAVAILABLE, err.message);
    if (err instanceof EnrollmentRefused) throw new Refusal(grpc.status.UNAUTHENTICATED, err.message);
    if (err instanceof CaRequestError)
      throw new Refusal(
        err.kind === 'invalid' ? grpc.status.INVALID_ARGUMENT : grpc.status.PERMISSION_DENIED,
        err.message,
      );
    throw err;
  }
}

/** Spends one request of `key`'s budget, or refuses with RESOURCE_EXHAUSTED and when to retry. */
function spend(limiter: KeyedRateLimiter | undefined, key: string, who: string): void {
  if (!limiter) return;
  const admission = limiter.take(key);
  if (admission.ok) return;
  const { limit, perMs } = limiter.rate;
  throw new Refusal(
    grpc.status.RESOURCE_EXHAUSTED,
    `certificate requests from ${who} exceed ${limit} per ${perMs / 1000}s (--ca-rate-limit): retry in ${Math.ceil(admission.retryAfterMs / 1000)}s`,
  );
}

async function authenticate(
  call: grpc.ServerUnaryCall<Buffer, Buffer>,
  deps: CertificateServiceDeps,
): Promise<Caller> {
  const peer = peerIdentity(call, deps.ca.trustDomain);
  if (peer.ok) {
    // One indexed read: a revocation from another process counts at once (unreachable: as last seen).
    await deps.revocations.refresh();
    const revoked = deps.revocations.reason(peer.serial);
    if (revoked !== undefined)
      throw new Refusal(
        grpc.status.UNAUTHENTICATED,
        `certificate ${peer.serial} has been revoked: ${revoked}`,
      );
    return { identity: peer.identity, via: 'certificate', serial: peer.serial };
  }
  const header = call.metadata.get('authorization')[0];
  const token = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;
  if (!token)
    throw new Refusal(
      grpc.status.UNAUTHENTICATED,
      `present a valid workload certificate or a join token (authorization: Bearer TOKEN): ${peer.reason}`,
    );
  try {
    return {
      identity: await redeemJoinToken(deps.tokens, token),
      via: 'join token',
      tokenId: tokenId(token),
      tokenHash: hashToken(token),
    };
  } catch (err) {
    if (err instanceof TokenError) throw new Refusal(grpc.status.UNAUTHENTICATED, err.message);
    if (err instanceof StoreUnavailable) throw new Refusal(grpc.status.UNAVAILABLE, err.message);
    throw err;
  }
}
