// One Istio HTTPMatchRequest as an xDS RouteMatch, for one proxy and port. Conditions that concern
// the proxy rather than the request (port, sourceLabels, sourceNamespace, gateways) are decided here:
// a match that cannot apply to this proxy is dropped (undefined), as Istio does.
import type { HeaderMatcher } from '../generated/envoy/config/route/v3/HeaderMatcher.js';
import type { QueryParameterMatcher } from '../generated/envoy/config/route/v3/QueryParameterMatcher.js';
import type { RouteMatch } from '../generated/envoy/config/route/v3/RouteMatch.js';
import type { StringMatcher } from '../generated/envoy/type/matcher/v3/StringMatcher.js';
import type { HTTPMatchRequest, StringMatch } from '../../mesh/types.js';
import type { RouteClient, RouteContext } from './route-context.js';

/** gRPC calls are always POSTs: a method match is decided once, not sent (gRPC cannot match `:method`). */
const GRPC_METHOD = 'POST';

/** The route match for `m`, or undefined when it can never match for this proxy and client. */
export function routeMatch(
  m: HTTPMatchRequest | undefined,
  ctx: RouteContext,
  vsNamespace: string,
): RouteMatch | undefined {
  if (!m) return { prefix: '/' };
  if (!appliesToProxy(m, ctx, vsNamespace)) return undefined;
  const grpc = ctx.client === 'grpc';
  // gRPC requests have no query string, scheme or authority header to match: such a match never applies.
  if (grpc && (m.queryParams || m.scheme || m.authority)) return undefined;
  const headers: HeaderMatcher[] = [];
  for (const [name, sm] of Object.entries(m.headers ?? {}))
    headers.push(headerMatcher(name, sm, false, ctx.client));
  for (const [name, sm] of Object.entries(m.withoutHeaders ?? {}))
    headers.push(headerMatcher(name, sm, true, ctx.client));
  if (m.method) {
    if (grpc) {
      if (!stringMatches(m.method, GRPC_METHOD)) return undefined;
    } else headers.push(headerMatcher(':method', m.method, false, ctx.client));
  }
  if (m.authority) headers.push(headerMatcher(':authority', m.authority, false, ctx.client));
  if (m.scheme) headers.push(headerMatcher(':scheme', m.scheme, false, ctx.client));
  const query: QueryParameterMatcher[] = Object.entries(m.queryParams ?? {}).map(([name, sm]) =>
    isPresence(sm) ? { name, present_match: true } : { name, string_match: stringMatcher(sm) },
  );
  return {
    ...pathSpecifier(m.uri),
    ...(m.ignoreUriCase && { case_sensitive: { value: false } }),
    ...(headers.length > 0 && { headers }),
    ...(query.length > 0 && { query_parameters: query }),
  };
}

/**
 * port, sourceLabels, sourceNamespace and gateways: does this match concern this proxy at all?
 * `gateways` entries are `mesh`, `namespace/name`, or a name in the VirtualService's namespace.
 */
export function appliesToProxy(
  m: Pick<HTTPMatchRequest, 'port' | 'sourceLabels' | 'sourceNamespace' | 'gateways'>,
  ctx: RouteContext,
  vsNamespace: string,
): boolean {
  if (m.port !== undefined && m.port !== ctx.port) return false;
  if (m.sourceNamespace !== undefined && m.sourceNamespace !== ctx.proxyNamespace) return false;
  const gateways = (m.gateways ?? []).map((g) =>
    g === 'mesh' || g.includes('/') ? g : `${vsNamespace}/${g}`,
  );
  if (gateways.length > 0 && !gateways.includes(ctx.gateway)) return false;
  return Object.entries(m.sourceLabels ?? {}).every(([k, v]) => ctx.proxyLabels[k] === v);
}

function pathSpecifier(uri: StringMatch | undefined): RouteMatch {
  if (uri?.exact !== undefined) return { path: uri.exact };
  if (uri?.regex !== undefined) return { safe_regex: { regex: uri.regex } };
  return { prefix: uri?.prefix ?? '/' };
}

function isPresence(sm: StringMatch): boolean {
  return sm.exact === undefined && sm.prefix === undefined && sm.regex === undefined;
}

function stringMatcher(sm: StringMatch): StringMatcher {
  if (sm.exact !== undefined) return { exact: sm.exact };
  if (sm.prefix !== undefined) return { prefix: sm.prefix };
  return { safe_regex: { regex: sm.regex ?? '' } };
}

// Envoy takes the StringMatcher form (Istio's); gRPC clients the direct fields gRFC A28 specifies.
function headerMatcher(name: string, sm: StringMatch, invert: boolean, client: RouteClient): HeaderMatcher {
  const base: HeaderMatcher = { name: name.toLowerCase(), ...(invert && { invert_match: true }) };
  if (isPresence(sm)) return { ...base, present_match: true };
  if (client === 'envoy') return { ...base, string_match: stringMatcher(sm) };
  if (sm.exact !== undefined) return { ...base, exact_match: sm.exact };
  if (sm.prefix !== undefined) return { ...base, prefix_match: sm.prefix };
  return { ...base, safe_regex_match: { regex: sm.regex ?? '' } };
}

/** Whether a StringMatch accepts `value`; an RE2 regex JS cannot compile (`(?i)`, `(?P<n>)`) is kept. */
function stringMatches(sm: StringMatch, value: string): boolean {
  if (sm.exact !== undefined) return sm.exact === value;
  if (sm.prefix !== undefined) return value.startsWith(sm.prefix);
  if (sm.regex === undefined) return true;
  try {
    return new RegExp(`^(?:${sm.regex})$`, 'u').test(value);
  } catch {
    return true;
  }
}
