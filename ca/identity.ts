// SPIFFE identities of workloads: spiffe://TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT.

export interface WorkloadIdentity {
  readonly trustDomain: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}

export class IdentityError extends Error {}

// A DNS-label-like charset keeps identities usable as URI path segments without escaping.
const SEGMENT = /^[a-z0-9]([a-z0-9._-]{0,251}[a-z0-9])?$/i;
const TRUST_DOMAIN = /^[a-z0-9]([a-z0-9.-]{0,253}[a-z0-9])?$/;

export function validateTrustDomain(trustDomain: string): string {
  if (!TRUST_DOMAIN.test(trustDomain))
    throw new IdentityError(
      `trust domain "${trustDomain}": lower-case letters, digits, dots and dashes (like cluster.local)`,
    );
  return trustDomain;
}

export function validateSegment(value: string, what: string): string {
  if (!SEGMENT.test(value))
    throw new IdentityError(
      `${what} "${value}": letters, digits, '.', '_' and '-', not starting with a symbol`,
    );
  return value;
}

export function spiffeUri(id: WorkloadIdentity): string {
  return `spiffe://${id.trustDomain}/ns/${id.namespace}/sa/${id.serviceAccount}`;
}

export function workloadIdentity(trustDomain: string, namespace: string, serviceAccount: string): string {
  const uri = spiffeUri({
    trustDomain: validateTrustDomain(trustDomain),
    namespace: validateSegment(namespace, 'namespace'),
    serviceAccount: validateSegment(serviceAccount, 'service account'),
  });
  if (isControlPlaneIdentity(uri))
    throw new IdentityError(`${uri} is the control plane's own identity: no workload may have it`);
  return uri;
}

// The control plane's identity: a URI SAN on the secure port's certificate that the CA never gives a
// workload (sign() and workloadIdentity() refuse it), so a client that checks for it knows it is
// talking to the control plane and not to a workload holding a certificate from the same CA.
export const CONTROL_PLANE_NAMESPACE = 'portolan-system';
export const CONTROL_PLANE_SERVICE_ACCOUNT = 'portolan-control-plane';

export function controlPlaneIdentity(trustDomain: string): string {
  return spiffeUri({
    trustDomain,
    namespace: CONTROL_PLANE_NAMESPACE,
    serviceAccount: CONTROL_PLANE_SERVICE_ACCOUNT,
  });
}

export function isControlPlaneIdentity(uri: string): boolean {
  const id = parseSpiffeUri(uri);
  return (
    id !== undefined &&
    id.namespace === CONTROL_PLANE_NAMESPACE &&
    id.serviceAccount === CONTROL_PLANE_SERVICE_ACCOUNT
  );
}

/** Parses a workload SPIFFE URI; undefined when it is not one. */
export function parseSpiffeUri(uri: string): WorkloadIdentity | undefined {
  const m = /^spiffe:\/\/([^/]+)\/ns\/([^/]+)\/sa\/([^/]+)$/.exec(uri);
  if (!m || !m[1] || !m[2] || !m[3]) return undefined;
  if (!TRUST_DOMAIN.test(m[1]) || !SEGMENT.test(m[2]) || !SEGMENT.test(m[3])) return undefined;
  return { trustDomain: m[1], namespace: m[2], serviceAccount: m[3] };
}
