// RequestAuthentications → Envoy's jwt_authn filter config, as Istio renders them: one provider per
// jwtRule, every verified payload written to the dynamic metadata key `payload` (which the RBAC
// filters after it match for requestPrincipals and request.auth.claims), and one requirement for
// every path: any provider's valid token, or no token at all. A request carrying a token that no
// provider accepts is refused (401); one with no token passes with no request principal, so only
// an AuthorizationPolicy can demand one — Istio's semantics. Keys come inline (`jwks`) or from
// `jwksUri`, fetched by Envoy through a cluster of their own (`jwks|PORT||HOST`, jwks-cluster.ts).
import type { JwtAuthentication } from '../generated/envoy/extensions/filters/http/jwt_authn/v3/JwtAuthentication.js';
import type { JwtProvider } from '../generated/envoy/extensions/filters/http/jwt_authn/v3/JwtProvider.js';
import type { JwtRule } from '../../mesh/security-types.js';
import type { RequestAuthenticationResource } from '../../mesh/types.js';
import { durationMs } from '../../model/duration.js';
import { JWT_PAYLOAD_KEY } from './authz-matchers.js';
import { protoDuration } from './fault.js';

export const JWT_AUTHN_TYPE =
  'type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication';

/** Envoy's JWKS fetch timeout when the rule sets none (Istio's default). */
const DEFAULT_JWKS_TIMEOUT_MS = 5000;
/** How long Envoy keeps fetched keys before fetching again (Envoy's default, written out). */
const JWKS_CACHE_MS = 5 * 60 * 1000;

/** Where one JWKS is fetched from: the cluster Envoy needs for it. */
export interface JwksEndpoint {
  /** `jwks|PORT||HOST`. */
  readonly cluster: string;
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
}

export function jwksClusterName(host: string, port: number): string {
  return `jwks|${port}||${host}`;
}

/** The endpoint of a `jwksUri` (already validated as an http(s) URL with a host). */
export function jwksEndpoint(uri: string): JwksEndpoint {
  const url = new URL(uri);
  const tls = url.protocol === 'https:';
  const port = url.port ? Number(url.port) : tls ? 443 : 80;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1'); // an IPv6 literal without its brackets
  return { cluster: jwksClusterName(host, port), host, port, tls };
}

/** The JWKS endpoints the rules fetch from, one per host and port, in rule order. */
export function jwksEndpoints(
  requestAuthentications: readonly RequestAuthenticationResource[],
): JwksEndpoint[] {
  const out = new Map<string, JwksEndpoint>();
  for (const rule of jwtRules(requestAuthentications)) {
    if (rule.rule.jwksUri === undefined) continue;
    const endpoint = jwksEndpoint(rule.rule.jwksUri);
    if (!out.has(endpoint.cluster)) out.set(endpoint.cluster, endpoint);
  }
  return [...out.values()];
}

/** The jwt_authn config for the RequestAuthentications of a workload; undefined when there are none. */
export function jwtAuthentication(
  requestAuthentications: readonly RequestAuthenticationResource[],
): JwtAuthentication | undefined {
  const rules = jwtRules(requestAuthentications);
  if (rules.length === 0) return undefined;
  const providers: Record<string, JwtProvider> = {};
  for (const { name, rule } of rules) providers[name] = provider(rule);
  return {
    providers,
    rules: [
      {
        match: { prefix: '/' },
        requires: {
          requires_any: {
            requirements: [...rules.map(({ name }) => ({ provider_name: name })), { allow_missing: {} }],
          },
        },
      },
    ],
    // CORS preflights carry no token; Istio lets them through to the CORS filter as well.
    bypass_cors_preflight: true,
  };
}

interface NamedRule {
  /** `NAMESPACE/NAME[I]`: the provider name, pointing back at the rule. */
  readonly name: string;
  readonly rule: JwtRule;
}

function jwtRules(requestAuthentications: readonly RequestAuthenticationResource[]): NamedRule[] {
  return requestAuthentications.flatMap((ra) =>
    (ra.spec.jwtRules ?? []).map((rule, i) => ({ name: `${ra.namespace}/${ra.name}[${i}]`, rule })),
  );
}

function provider(rule: JwtRule): JwtProvider {
  const keys: Pick<JwtProvider, 'local_jwks' | 'remote_jwks'> =
    rule.jwks !== undefined
      ? { local_jwks: { inline_string: rule.jwks } }
      : {
          remote_jwks: {
            http_uri: {
              uri: rule.jwksUri ?? '',
              cluster: jwksEndpoint(rule.jwksUri ?? '').cluster,
              timeout: protoDuration(
                rule.timeout === undefined
                  ? DEFAULT_JWKS_TIMEOUT_MS
                  : (durationMs(rule.timeout) ?? DEFAULT_JWKS_TIMEOUT_MS),
              ),
            },
            cache_duration: protoDuration(JWKS_CACHE_MS),
          },
        };
  return {
    issuer: rule.issuer,
    ...(rule.audiences && { audiences: [...rule.audiences] }),
    ...keys,
    forward: rule.forwardOriginalToken ?? false,
    ...(rule.fromHeaders && {
      from_headers: rule.fromHeaders.map((h) => ({
        name: h.name,
        ...(h.prefix && { value_prefix: h.prefix }),
      })),
    }),
    ...(rule.fromParams && { from_params: [...rule.fromParams] }),
    ...(rule.fromCookies && { from_cookies: [...rule.fromCookies] }),
    ...(rule.outputPayloadToHeader && { forward_payload_header: rule.outputPayloadToHeader }),
    payload_in_metadata: JWT_PAYLOAD_KEY,
    // As Istio: `scope: "a b"` is matched as the list [a, b] by request.auth.claims[scope].
    normalize_payload_in_metadata: { space_delimited_claims: ['scope', 'permission'] },
    ...(rule.outputClaimToHeaders && {
      claim_to_headers: rule.outputClaimToHeaders.map((c) => ({
        header_name: c.header,
        claim_name: c.claim,
      })),
    }),
  };
}
