// The SPIFFE identity of a TLS peer. The secure port's TLS layer has already verified the client's
// chain against the trust bundle (grpc-js reports a peer certificate only when it did); here the
// certificate must also name exactly one workload identity in our trust domain (Istio's VerifyPeerCert).
import type * as grpc from '@grpc/grpc-js';
import { sanEntries } from './certificates.js';
import { parseSpiffeUri } from './identity.js';
import { x509 } from './x509.js';

export type PeerIdentity =
  | { readonly ok: true; readonly identity: string; readonly serial: string }
  | { readonly ok: false; readonly reason: string };

type AuthContext = ReturnType<grpc.ServerUnaryCall<unknown, unknown>['getAuthContext']>;

interface CallWithAuth {
  getAuthContext(): AuthContext;
}

export function peerIdentity(call: CallWithAuth, trustDomain: string, now = new Date()): PeerIdentity {
  const raw = call.getAuthContext()?.sslPeerCertificate?.raw;
  if (!raw) return { ok: false, reason: 'no client certificate trusted by this CA was presented' };
  const cert = new x509.X509Certificate(raw);
  if (cert.notAfter <= now || cert.notBefore > now)
    return { ok: false, reason: 'the client certificate is outside its validity period' };
  const uris = sanEntries(cert.extensions)
    .filter((s) => s.startsWith('url:'))
    .map((s) => s.slice(4));
  if (uris.length !== 1 || !uris[0])
    return { ok: false, reason: `the client certificate must carry exactly one URI SAN, has ${uris.length}` };
  const id = parseSpiffeUri(uris[0]);
  if (!id)
    return { ok: false, reason: `the client certificate's URI ${uris[0]} is not a workload SPIFFE ID` };
  if (id.trustDomain !== trustDomain)
    return {
      ok: false,
      reason: `the client certificate is for trust domain ${id.trustDomain}, not ${trustDomain}`,
    };
  return { ok: true, identity: uris[0], serial: cert.serialNumber };
}
