// What a failed connection to the control plane means, in words that name the flag or command that
// fixes it. gRPC reports these as "No connection established. Last error: Error: <OpenSSL or
// socket text>. Resolution note: " (issue #48: nothing listening at --ca-addr, the plaintext xDS
// port given instead of the secure one, a --root-cert from another CA). The missing-SAN case has its
// own message already (control-plane-check.ts).

/** grpc-js's connection errors end with an empty "Resolution note: ". */
export function tidyGrpcDetails(details: string): string {
  return details.replace(/\.?\s*Resolution note:\s*$/, '');
}

/**
 * The error `details` of a call to the control plane at `address` (given with `flag`, e.g.
 * --ca-addr), explained when recognised; otherwise as gRPC said it, tidied.
 */
export function explainConnectionError(details: string, address: string, flag = '--ca-addr'): string {
  const raw = tidyGrpcDetails(details);
  if (/ECONNREFUSED/.test(raw))
    return `nothing listens at ${flag} ${address}: is portolan serve running there, with --secure-xds-addr on that port? (${raw})`;
  if (/wrong version number|packet length too long|http_request|unknown protocol/i.test(raw))
    return (
      `${flag} ${address} does not speak TLS: is it serve's plaintext --xds-addr? Give ${flag} the secure port ` +
      `(serve's --secure-xds-addr, 15012 by default)`
    );
  if (
    /self[- ]signed certificate|unable to (get local issuer|verify the first) certificate|certificate verify failed/i.test(
      raw,
    )
  )
    return (
      `the server at ${address} has a certificate the trust bundle in --root-cert does not accept: ` +
      `fetch the control plane's with \`portolan ca root\` (or \`portolan vm bundle\`) and point --root-cert at it; ` +
      `or ${flag} names another server (${raw.replace(/^.*Last error: (Error: )?/, '')})`
    );
  if (/ENOTFOUND|EAI_AGAIN/.test(raw)) return `cannot resolve the host of ${flag} ${address} (${raw})`;
  if (/ETIMEDOUT|EHOSTUNREACH|ENETUNREACH/.test(raw))
    return `cannot reach ${flag} ${address}: a firewall, or the wrong address? (${raw})`;
  return raw;
}
