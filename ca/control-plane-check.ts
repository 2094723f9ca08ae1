// How a workload knows it reached the control plane: the TLS chain leads to the mesh's roots, the
// certificate names the address it dialled (the secure port's `--secure-xds-sans`), and it carries the
// control plane's SPIFFE ID, which the CA never gives a workload. gRPC reports a failed check only as
// "connection failed"; the check keeps its last failure so callers can say which flag to set.
import { isIP } from 'node:net';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import type { ChannelOptions } from '@grpc/grpc-js';
import { controlPlaneIdentity } from './identity.js';

/** The server certificate did not prove the control plane: names, or identity. */
export class ServerIdentityError extends Error {}

/**
 * TLS server name sent when the address is an IP. Node warns (DEP0123) when SNI is an IP, and the
 * secure port ignores SNI; the address itself is still checked against the certificate's IP SANs.
 */
export const CONTROL_PLANE_SNI = 'portolan-control-plane';

export interface ControlPlaneCheck {
  /** For grpc.credentials.createSsl's verifyOptions. */
  readonly checkServerIdentity: (hostname: string, cert: PeerCertificate) => Error | undefined;
  /** Channel options that go with it (the server name for an IP address). */
  readonly channelOptions: ChannelOptions;
  /** Why the last handshake was refused by this check, if it was. */
  lastFailure(): ServerIdentityError | undefined;
}

/** The host part of HOST:PORT, [IPv6]:PORT, or a bare host. */
export function hostOf(address: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(address);
  if (bracketed?.[1]) return bracketed[1];
  const colon = address.lastIndexOf(':');
  return colon > 0 && address.indexOf(':') === colon ? address.slice(0, colon) : address;
}

/**
 * Checks that the server at `address` is the control plane of `trustDomain` (undefined: only its name,
 * for a first contact that does not know the trust domain).
 */
export function controlPlaneCheck(address: string, trustDomain: string | undefined): ControlPlaneCheck {
  const host = hostOf(address);
  let failure: ServerIdentityError | undefined;
  const verify = (cert: PeerCertificate): ServerIdentityError | undefined => {
    const sans = cert.subjectaltname ?? '';
    const named = sans
      .split(', ')
      .filter((s) => s.startsWith('DNS:') || s.startsWith('IP Address:'))
      .join(', ');
    if (checkServerIdentity(host, cert))
      return new ServerIdentityError(
        `the control plane's certificate names ${named || 'nothing'}, not ${host}: start portolan serve with ` +
          `--secure-xds-sans listing ${host} (comma-separated DNS names and IPs, e.g. ` +
          `--secure-xds-sans ${host},localhost,127.0.0.1), or reach it by one of the names it has`,
      );
    if (trustDomain === undefined) return undefined;
    const wanted = controlPlaneIdentity(trustDomain);
    const uris = sans
      .split(', ')
      .filter((s) => s.startsWith('URI:'))
      .map((s) => s.slice(4));
    if (!uris.includes(wanted))
      return new ServerIdentityError(
        `the server at ${address} is not the control plane of ${trustDomain}: its certificate lacks ${wanted}` +
          (uris.length > 0 ? ` (it is ${uris.join(', ')})` : ' (a portolan serve older than the agent?)'),
      );
    return undefined;
  };
  return {
    checkServerIdentity: (_hostname, cert) => {
      failure = verify(cert);
      return failure;
    },
    channelOptions: isIP(host) ? { 'grpc.ssl_target_name_override': CONTROL_PLANE_SNI } : {},
    lastFailure: () => failure,
  };
}
