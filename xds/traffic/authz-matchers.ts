// Istio's AuthorizationPolicy values as Envoy matchers (the forms Istio renders): a value is exact,
// `*` (present: `.+`), `prefix*` or `*suffix`. Peer principals gain the `spiffe://` their SAN
// carries; namespaces and service accounts match inside it by regex; JWT claims are read from the
// payload jwt_authn writes into the request's dynamic metadata (xds/traffic/jwt-authn.ts).
import type { CidrRange } from '../generated/envoy/config/core/v3/CidrRange.js';
import type { HeaderMatcher } from '../generated/envoy/config/route/v3/HeaderMatcher.js';
import type { MetadataMatcher } from '../generated/envoy/type/matcher/v3/MetadataMatcher.js';
import type { StringMatcher } from '../generated/envoy/type/matcher/v3/StringMatcher.js';
import type { ValueMatcher } from '../generated/envoy/type/matcher/v3/ValueMatcher.js';

/** The jwt_authn filter's name: the dynamic metadata namespace its payloads are written under. */
export const JWT_FILTER_NAME = 'envoy.filters.http.jwt_authn';
/** The key every provider writes its verified payload under (`payload_in_metadata`). */
export const JWT_PAYLOAD_KEY = 'payload';

const PRESENT: StringMatcher = { safe_regex: { regex: '.+' } };

/** `*` → present, `a*` → prefix, `*a` → suffix, else exact; `prefix` goes before the literal (not for suffixes). */
export function stringMatcher(
  value: string,
  { prefix = '', ignoreCase = false }: { prefix?: string; ignoreCase?: boolean } = {},
): StringMatcher {
  const nocase = ignoreCase ? { ignore_case: true } : {};
  if (value === '*') return PRESENT;
  if (value.endsWith('*')) return { prefix: `${prefix}${value.slice(0, -1)}`, ...nocase };
  if (value.startsWith('*')) return { suffix: value.slice(1), ...nocase };
  return { exact: `${prefix}${value}`, ...nocase };
}

/** A header: `*` is presence; otherwise a string match on its value. */
export function headerMatcher(name: string, value: string, ignoreCase = false): HeaderMatcher {
  if (value === '*') return { name, present_match: true };
  return { name, string_match: stringMatcher(value, { ignoreCase }) };
}

/** A peer principal (`cluster.local/ns/NS/sa/SA`) against the SPIFFE URI SAN of the peer certificate. */
export function principalMatcher(value: string): StringMatcher {
  return stringMatcher(value, { prefix: 'spiffe://' });
}

/** A namespace pattern inside the SPIFFE URI: `spiffe://TD/ns/NAMESPACE/sa/SA`. */
export function namespaceMatcher(value: string): StringMatcher {
  const ns = value === '*' ? '[^/]+' : value.split('*').map(escapeRegex).join('[^/]*');
  return { safe_regex: { regex: `spiffe://[^/]+/ns/${ns}/sa/[^/]+` } };
}

/** A service account, `SA` (in `defaultNamespace`) or `NS/SA`, inside the SPIFFE URI. */
export function serviceAccountMatcher(value: string, defaultNamespace: string): StringMatcher {
  const [ns, sa] = value.includes('/') ? value.split('/') : [defaultNamespace, value];
  return { safe_regex: { regex: `spiffe://[^/]+/ns/${escapeRegex(ns ?? '')}/sa/${escapeRegex(sa ?? '')}` } };
}

export function cidrRange(value: string): CidrRange {
  const [address = '', length] = value.split('/');
  const full = address.includes(':') ? 128 : 32;
  return { address_prefix: address, prefix_len: { value: length === undefined ? full : Number(length) } };
}

/** A claim of the verified JWT payload (`path` nested: `['groups']`, `['realm', 'roles']`). */
export function claimMatcher(path: readonly string[], value: string): MetadataMatcher {
  const match = stringMatcher(value);
  // A claim is a string or a list of strings (aud, groups): either form matches.
  const either: ValueMatcher = {
    or_match: {
      value_matchers: [{ string_match: match }, { list_match: { one_of: { string_match: match } } }],
    },
  };
  return payloadMatcher(path, either);
}

/** `iss` and `sub` of the verified JWT, for a request principal `ISSUER/SUBJECT` (Istio's split at the last `/`). */
export function requestPrincipalMatchers(value: string): [MetadataMatcher, MetadataMatcher] {
  const at = value.lastIndexOf('/');
  const iss = at >= 0 ? value.slice(0, at) : value;
  const sub = at >= 0 ? value.slice(at + 1) : '';
  let issuer: StringMatcher;
  let subject: StringMatcher;
  if (value === '*') [issuer, subject] = [PRESENT, PRESENT];
  else if (value.startsWith('*'))
    [issuer, subject] =
      at >= 0
        ? [iss === '*' ? PRESENT : { suffix: iss.slice(1) }, { exact: sub }]
        : [PRESENT, { suffix: value.slice(1) }];
  else if (value.endsWith('*'))
    [issuer, subject] =
      at >= 0
        ? [{ exact: iss }, sub === '*' ? PRESENT : { prefix: sub.slice(0, -1) }]
        : [{ prefix: value.slice(0, -1) }, PRESENT];
  else [issuer, subject] = [{ exact: iss }, { exact: sub }];
  return [
    payloadMatcher(['iss'], { string_match: issuer }),
    payloadMatcher(['sub'], { string_match: subject }),
  ];
}

function payloadMatcher(path: readonly string[], value: ValueMatcher): MetadataMatcher {
  return {
    filter: JWT_FILTER_NAME,
    path: [JWT_PAYLOAD_KEY, ...path].map((key) => ({ key })),
    value,
  };
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
