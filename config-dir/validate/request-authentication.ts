// RequestAuthentication (security.istio.io): which JWTs requests to a workload may carry, checked
// as Istio does (issuer required, jwks or jwksUri, header names) plus what Envoy needs to load the
// result: the inline JWKS parses, the URI is http(s) with a host. Istio's OpenID discovery (neither
// jwks nor jwksUri) would need the control plane to fetch from the issuer: refused, with the reason.
import type { RequestAuthenticationSpec } from '../../mesh/security-types.js';
import { duration } from './common.js';
import { workloadSelector } from './authorization-policy.js';
import { arrayOf, bool, obj, str, type Check } from './schema.js';
import { isHeaderName } from './security-values.js';

const headerName = str({
  nonEmpty: true,
  test: (s) =>
    isHeaderName(s) && !s.startsWith(':')
      ? undefined
      : `must be an HTTP header name, got ${JSON.stringify(s)}`,
});

const jwksUri = str({
  nonEmpty: true,
  test: (s) => {
    let url: URL;
    try {
      url = new URL(s);
    } catch {
      return `must be an http:// or https:// URL, got ${JSON.stringify(s)}`;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return `must be an http:// or https:// URL, got ${JSON.stringify(s)}`;
    if (!url.hostname) return `needs a host, got ${JSON.stringify(s)}`;
    if (url.username || url.password) return 'must not carry credentials';
    return undefined;
  },
});

/** A JWKS document (`{"keys": [...]}`) or a PEM public key, as Envoy's local_jwks takes. */
const inlineJwks = str({
  nonEmpty: true,
  test: (s) => {
    if (s.trimStart().startsWith('-----BEGIN')) return undefined;
    try {
      const doc = JSON.parse(s) as unknown;
      if (typeof doc === 'object' && doc !== null && Array.isArray((doc as { keys?: unknown }).keys))
        return undefined;
    } catch {
      // reported below
    }
    return 'must be a JWKS JSON document ({"keys": [...]}) or a PEM public key';
  },
});

const jwtRule = obj(
  {
    issuer: str({ nonEmpty: true }),
    audiences: arrayOf(str({ nonEmpty: true })),
    jwks: inlineJwks,
    jwksUri,
    fromHeaders: arrayOf(
      obj({ name: headerName, prefix: str() }, { required: ['name'], message: 'JWTHeader' }),
    ),
    fromParams: arrayOf(str({ nonEmpty: true })),
    fromCookies: arrayOf(str({ nonEmpty: true })),
    outputPayloadToHeader: headerName,
    outputClaimToHeaders: arrayOf(
      obj(
        { header: headerName, claim: str({ nonEmpty: true }) },
        { required: ['header', 'claim'], message: 'ClaimToHeader' },
      ),
    ),
    forwardOriginalToken: bool,
    timeout: duration,
  },
  {
    message: 'JWTRule',
    refine: (rule, path, problems) => {
      // Istio: "issuer or jwksUri must be non-empty" (a token from any issuer whose key verifies).
      if (
        rule.issuer === undefined &&
        rule.jwksUri === undefined &&
        !problems.errors.some((e) => e.path.at(-1) === 'issuer' || e.path.at(-1) === 'jwksUri')
      )
        problems.error([...path, 'issuer'], 'is required unless jwksUri is set');
      if (rule.jwksUri?.startsWith('http:'))
        problems.warn(
          [...path, 'jwksUri'],
          'http:// fetches the JWKS without TLS: anyone on the path to it can substitute keys and forge tokens; use https://',
        );
      if (rule.jwks !== undefined && rule.jwksUri !== undefined)
        problems.error(path, 'only one of jwks, jwksUri may be set');
      // Istio would discover the keys from the issuer's OpenID configuration, fetched by istiod.
      const given = (field: string): boolean =>
        problems.errors.some(
          (e) => e.path[path.length] === field && path.every((segment, i) => e.path[i] === segment),
        );
      if (rule.jwks === undefined && rule.jwksUri === undefined && !given('jwks') && !given('jwksUri'))
        problems.error(path, 'needs jwks or jwksUri: Portolan does not run OpenID discovery from the issuer');
    },
  },
);

/** A rule without `issuer` accepts tokens of any issuer (Envoy's provider with no issuer). */
const jwtRuleWithIssuer: Check<
  RequestAuthenticationSpec['jwtRules'] extends readonly (infer R)[] | undefined ? R : never
> = (value, path, problems) => {
  const rule = jwtRule(value, path, problems);
  return rule && { ...rule, issuer: rule.issuer ?? '' };
};

export const requestAuthenticationSpec: Check<RequestAuthenticationSpec> = obj(
  { selector: workloadSelector, jwtRules: arrayOf(jwtRuleWithIssuer) },
  { message: 'RequestAuthentication' },
);
