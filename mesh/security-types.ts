// The security.istio.io kinds that decide who may call a workload: AuthorizationPolicy (who may do
// what) and RequestAuthentication (which JWTs a request may carry), as validated from the config
// directory. Field names follow Istio's API so existing manifests load unchanged. Values keep
// Istio's string patterns (`*`, `prefix*`, `*suffix`); xds/traffic/authz-*.ts renders them.

/** Which workloads (by their labels) a policy applies to; the whole namespace when absent. */
export interface WorkloadSelector {
  readonly matchLabels: Readonly<Record<string, string>>;
}

export type AuthorizationAction = 'ALLOW' | 'DENY' | 'AUDIT' | 'CUSTOM';

/** Who the request comes from. Every field set must match; a list matches when any value does. */
export interface AuthorizationSource {
  /** Peer identities from mTLS, `TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT`. */
  readonly principals?: readonly string[];
  readonly notPrincipals?: readonly string[];
  /** Request identities from a JWT, `ISSUER/SUBJECT`. */
  readonly requestPrincipals?: readonly string[];
  readonly notRequestPrincipals?: readonly string[];
  /** The peer's namespace, from its mTLS identity. */
  readonly namespaces?: readonly string[];
  readonly notNamespaces?: readonly string[];
  /** `NAME` (the policy's namespace) or `NAMESPACE/NAME`, from the peer's mTLS identity. */
  readonly serviceAccounts?: readonly string[];
  readonly notServiceAccounts?: readonly string[];
  /** The peer's address (IP or CIDR). */
  readonly ipBlocks?: readonly string[];
  readonly notIpBlocks?: readonly string[];
  /** The original client's address (X-Forwarded-For, PROXY protocol). */
  readonly remoteIpBlocks?: readonly string[];
  readonly notRemoteIpBlocks?: readonly string[];
}

/** What the request asks for. HTTP-only except `ports`. */
export interface AuthorizationOperation {
  readonly hosts?: readonly string[];
  readonly notHosts?: readonly string[];
  /** Port numbers, as strings (Istio's type); numbers are accepted and kept as strings. */
  readonly ports?: readonly string[];
  readonly notPorts?: readonly string[];
  readonly methods?: readonly string[];
  readonly notMethods?: readonly string[];
  /** URL paths; for gRPC `/package.Service/Method`. */
  readonly paths?: readonly string[];
  readonly notPaths?: readonly string[];
}

/** An extra condition: `key` is one of Istio's attributes (`source.ip`, `request.headers[x-id]`, …). */
export interface AuthorizationCondition {
  readonly key: string;
  readonly values?: readonly string[];
  readonly notValues?: readonly string[];
}

/** A rule matches when some `from` matches, some `to` matches and every `when` holds. */
export interface AuthorizationRule {
  readonly from?: readonly { readonly source: AuthorizationSource }[];
  readonly to?: readonly { readonly operation: AuthorizationOperation }[];
  readonly when?: readonly AuthorizationCondition[];
}

export interface AuthorizationPolicySpec {
  readonly selector?: WorkloadSelector;
  /** Absent means ALLOW, as in Istio. */
  readonly action?: AuthorizationAction;
  /** Absent: the policy has no rules (ALLOW: matches nothing, so denies everything). */
  readonly rules?: readonly AuthorizationRule[];
}

/** Where a JWT is read from: a header, with an optional value prefix such as `Bearer `. */
export interface JwtHeader {
  readonly name: string;
  readonly prefix?: string;
}

export interface JwtRule {
  readonly issuer: string;
  readonly audiences?: readonly string[];
  /** The JWKS (or a PEM key) inline. Exactly one of jwks / jwksUri. */
  readonly jwks?: string;
  /** Where Envoy fetches the JWKS from (http or https). */
  readonly jwksUri?: string;
  readonly fromHeaders?: readonly JwtHeader[];
  readonly fromParams?: readonly string[];
  readonly fromCookies?: readonly string[];
  /** Forward the verified payload (base64url) upstream in this header. */
  readonly outputPayloadToHeader?: string;
  readonly outputClaimToHeaders?: readonly { readonly header: string; readonly claim: string }[];
  /** Keep the token in the request sent upstream (Envoy strips it by default). */
  readonly forwardOriginalToken?: boolean;
  /** How long Envoy waits for the JWKS fetch (Go-style duration); default 5s. */
  readonly timeout?: string;
}

export interface RequestAuthenticationSpec {
  readonly selector?: WorkloadSelector;
  readonly jwtRules?: readonly JwtRule[];
}
