// VirtualService validation: hosts, destinations, weights (several must sum to 100), durations,
// one-of fields, regexes (RE2 syntax, as Envoy and gRPC compile them), retry conditions, fault
// statuses. Any of these is an error: the file is rejected and its last good version stays in force.
// Matches that can never be reached (after a catch-all, or identical to an earlier one) are
// warnings, as Istio's validation warns (bookinfo's fault-injection-details-v1.yaml has one).
// A route naming a subset no DestinationRule defines is a cross-resource warning only
// (unknown-subsets.ts).
import type { FieldPath } from '../parse.js';
import type {
  HTTPMatchRequest,
  HTTPRoute,
  L4MatchAttributes,
  RouteDestination,
  StringMatch,
  VirtualServiceSpec,
} from '../../mesh/types.js';
import { grpcStatusCode } from '../../model/grpc-status.js';
import { re2Error } from './re2.js';
import {
  duration,
  hostname,
  parseDuration,
  hostOrWildcard,
  ipOrCidr,
  percent,
  portNumber,
  portSelector,
  stringMap,
} from './common.js';
import {
  arrayOf,
  atMostOne,
  bool,
  int,
  mapOf,
  obj,
  oneOf,
  str,
  type Check,
  type Problems,
} from './schema.js';

const MATCH_KINDS = ['exact', 'prefix', 'regex'] as const;
const REDIRECT_CODES: readonly number[] = [301, 302, 303, 307, 308];

/** A regex in RE2 syntax (Envoy's and gRPC's safe_regex). */
const regex: Check<string> = str({
  test: (s) => {
    const reason = re2Error(s);
    // Quoted as written (JSON would double every backslash), and cut short if long.
    const shown = s.length > 120 ? `${s.slice(0, 120)}…` : s;
    return reason === undefined ? undefined : `not a valid RE2 regex \`${shown}\`: ${reason}`;
  },
});

/** A StringMatch for uri/method/...: exactly one of exact, prefix, regex. */
const stringMatch: Check<StringMatch> = obj(
  { exact: str(), prefix: str(), regex },
  {
    message: 'StringMatch',
    refine: (m, path, problems) => {
      const set = MATCH_KINDS.filter((k) => m[k] !== undefined);
      if (set.length !== 1 && !hasErrorsUnder(problems, path))
        problems.error(path, `exactly one of ${MATCH_KINDS.join(', ')} must be set`);
    },
  },
);

/** In header and query maps an empty match means "present", so at most one kind. */
const presenceMatch: Check<StringMatch> = obj(
  { exact: str(), prefix: str(), regex },
  { message: 'StringMatch', refine: (m, path, problems) => atMostOne(m, MATCH_KINDS, path, problems) },
);

const destination = obj(
  { host: hostname, subset: str(), port: portSelector },
  { required: ['host'], message: 'Destination' },
);

const headerOperations = obj(
  { set: stringMap, add: stringMap, remove: arrayOf(str()) },
  { message: 'HeaderOperations' },
);
const headers = obj({ request: headerOperations, response: headerOperations }, { message: 'Headers' });

const httpMatch = obj(
  {
    name: str(),
    uri: stringMatch,
    scheme: stringMatch,
    method: stringMatch,
    authority: stringMatch,
    headers: mapOf(presenceMatch),
    port: portNumber,
    sourceLabels: stringMap,
    gateways: arrayOf(str()),
    queryParams: mapOf(presenceMatch),
    ignoreUriCase: bool,
    withoutHeaders: mapOf(presenceMatch),
    sourceNamespace: str(),
  },
  { message: 'HTTPMatchRequest' },
);

const weight = int(0, 100);

const httpRouteDestination = obj(
  { destination, weight, headers },
  { required: ['destination'], message: 'HTTPRouteDestination' },
);
const routeDestination = obj(
  { destination, weight },
  { required: ['destination'], message: 'RouteDestination' },
);

const redirect = obj(
  {
    uri: str(),
    authority: str(),
    port: portNumber,
    derivePort: oneOf(['FROM_PROTOCOL_DEFAULT', 'FROM_REQUEST_PORT']),
    scheme: str(),
    redirectCode: (value, path, problems) => {
      if (typeof value === 'number' && REDIRECT_CODES.includes(value)) return value;
      problems.error(path, `must be one of ${REDIRECT_CODES.join(', ')} (the redirects Envoy can send)`);
      return undefined;
    },
  },
  {
    message: 'HTTPRedirect',
    refine: (r, path, problems) => atMostOne(r, ['port', 'derivePort'], path, problems),
  },
);

const directResponse = obj(
  {
    status: int(200, 599),
    body: obj(
      { string: str(), bytes: str() },
      {
        message: 'HTTPBody',
        refine: (b, path, problems) => atMostOne(b, ['string', 'bytes'], path, problems),
      },
    ),
  },
  { required: ['status'], message: 'HTTPDirectResponse' },
);

const rewrite = obj(
  {
    uri: str(),
    authority: str(),
    uriRegexRewrite: obj(
      { match: regex, rewrite: str() },
      { required: ['match', 'rewrite'], message: 'RegexRewrite' },
    ),
  },
  {
    message: 'HTTPRewrite',
    refine: (r, path, problems) => atMostOne(r, ['uri', 'uriRegexRewrite'], path, problems),
  },
);

/** Istio's retryOn conditions (Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on values). */
export const RETRY_ON = [
  '5xx',
  'gateway-error',
  'reset',
  'reset-before-request',
  'connect-failure',
  'envoy-ratelimited',
  'retriable-4xx',
  'refused-stream',
  'retriable-status-codes',
  'retriable-headers',
  'http3-post-connect-failure',
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
] as const;

const retryOn: Check<string> = str({
  test: (s) => {
    const bad = s
      .split(',')
      .map((t) => t.trim())
      .filter((t) => !(RETRY_ON as readonly string[]).includes(t) && !/^[1-5]\d\d$/.test(t));
    return bad.length === 0
      ? undefined
      : `unknown retry condition ${bad.map((b) => JSON.stringify(b)).join(', ')}: use ${RETRY_ON.join(', ')} or an HTTP status code`;
  },
});

/** A duration of at least 1 ms (Istio's rule for per-try timeouts and fault delays). */
const positiveDuration: Check<string> = (value, path, problems) => {
  const checked = duration(value, path, problems);
  if (checked === undefined) return undefined;
  if ((parseDuration(checked) ?? 0) < 1) {
    problems.error(path, `must be at least 1ms, got ${JSON.stringify(checked)}`);
    return undefined;
  }
  return checked;
};

const retries = obj(
  { attempts: int(0, 2_147_483_647), perTryTimeout: positiveDuration, retryOn, retryRemoteLocalities: bool },
  { message: 'HTTPRetry' },
);

const grpcStatus: Check<string> = str({
  test: (s) =>
    grpcStatusCode(s) === undefined
      ? `must be a gRPC status name such as UNAVAILABLE (or its number 0..16), got ${JSON.stringify(s)}`
      : undefined,
});

const fault = obj(
  {
    delay: obj(
      { fixedDelay: positiveDuration, percentage: percent },
      { required: ['fixedDelay'], message: 'HTTPFaultInjection.Delay' },
    ),
    abort: obj(
      { httpStatus: int(200, 599), grpcStatus, percentage: percent },
      {
        message: 'HTTPFaultInjection.Abort',
        refine: (a, path, problems) => {
          if (a.httpStatus === undefined && a.grpcStatus === undefined && !hasErrorsUnder(problems, path))
            problems.error(path, 'one of httpStatus, grpcStatus is required');
          atMostOne(a, ['httpStatus', 'grpcStatus'], path, problems);
        },
      },
    ),
  },
  {
    message: 'HTTPFaultInjection',
    refine: (f, path, problems) => {
      if (f.delay === undefined && f.abort === undefined)
        problems.error(path, 'one of delay, abort is required');
    },
  },
);

const corsPolicy = obj(
  {
    allowOrigins: arrayOf(stringMatch),
    allowMethods: arrayOf(str()),
    allowHeaders: arrayOf(str()),
    exposeHeaders: arrayOf(str()),
    maxAge: duration,
    allowCredentials: bool,
  },
  { message: 'CorsPolicy' },
);

const httpRoute: Check<HTTPRoute> = obj(
  {
    name: str(),
    match: arrayOf(httpMatch),
    route: arrayOf(httpRouteDestination, { nonEmpty: true }),
    redirect,
    directResponse,
    rewrite,
    timeout: duration,
    retries,
    fault,
    mirror: destination,
    mirrorPercent: int(0, 100),
    mirrorPercentage: percent,
    mirrors: arrayOf(
      obj({ destination, percentage: percent }, { required: ['destination'], message: 'HTTPMirrorPolicy' }),
    ),
    corsPolicy,
    headers,
  },
  {
    message: 'HTTPRoute',
    refine: (r, path, problems) => {
      const actions = (['route', 'redirect', 'directResponse'] as const).filter((k) => r[k] !== undefined);
      // Not after an error in the route (a broken `route`, a `delegate`): that would mislead.
      if (actions.length === 0 && !hasErrorsUnder(problems, path))
        problems.error(path, 'one of route, redirect, directResponse is required');
      atMostOne(r, ['route', 'redirect', 'directResponse'], path, problems);
      if (r.rewrite && r.redirect) problems.error([...path, 'rewrite'], 'cannot be combined with redirect');
      atMostOne(r, ['mirror', 'mirrors'], path, problems);
      checkWeights(r.route ?? [], [...path, 'route'], problems);
    },
  },
);

const l4Match = {
  destinationSubnets: arrayOf(ipOrCidr),
  port: portNumber,
  sourceLabels: stringMap,
  gateways: arrayOf(str()),
  sourceNamespace: str(),
};

const tcpRoute = obj(
  {
    match: arrayOf(obj(l4Match, { message: 'L4MatchAttributes' })),
    route: arrayOf(routeDestination, { nonEmpty: true }),
  },
  {
    required: ['route'],
    message: 'TCPRoute',
    refine: (r, path, problems) => checkWeights(r.route ?? [], [...path, 'route'], problems),
  },
);

const tlsRoute = obj(
  {
    match: arrayOf(
      obj(
        { sniHosts: arrayOf(hostOrWildcard, { nonEmpty: true }), ...l4Match },
        { required: ['sniHosts'], message: 'TLSMatchAttributes' },
      ),
      {
        nonEmpty: true,
      },
    ),
    route: arrayOf(routeDestination, { nonEmpty: true }),
  },
  {
    required: ['match', 'route'],
    message: 'TLSRoute',
    refine: (r, path, problems) => checkWeights(r.route ?? [], [...path, 'route'], problems),
  },
);

export const virtualServiceSpec: Check<VirtualServiceSpec> = obj(
  {
    hosts: arrayOf(hostOrWildcard, { nonEmpty: true }),
    gateways: arrayOf(str()),
    http: arrayOf(httpRoute),
    tls: arrayOf(tlsRoute),
    tcp: arrayOf(tcpRoute),
    exportTo: arrayOf(str()),
  },
  {
    required: ['hosts'],
    message: 'VirtualService',
    refine: (vs, path, problems) => {
      const routes = (vs.http?.length ?? 0) + (vs.tls?.length ?? 0) + (vs.tcp?.length ?? 0);
      if (routes === 0) problems.error(path, 'at least one http, tls or tcp route is required');
      // Judged only on routes that validated: a match missing a broken field is not what was written.
      if (!hasErrorsUnder(problems, [...path, 'http']))
        checkReachable(vs.http ?? [], [...path, 'http'], isHttpCatchAll, problems);
      if (!hasErrorsUnder(problems, [...path, 'tcp']))
        checkReachable(vs.tcp ?? [], [...path, 'tcp'], isL4CatchAll, problems);
    },
  },
);

/** Whether an error was already recorded at or below `path` (so a follow-on complaint would mislead). */
function hasErrorsUnder(problems: Problems, path: FieldPath): boolean {
  return problems.errors.some((e) => path.every((segment, i) => e.path[i] === segment));
}

/** One destination may omit its weight (it takes everything); several must split exactly 100. */
function checkWeights(
  routes: readonly Partial<RouteDestination>[],
  path: FieldPath,
  problems: Problems,
): void {
  if (routes.length < 2) return;
  const sum = routes.reduce((total, r) => total + (r.weight ?? 0), 0);
  if (sum !== 100)
    problems.error(path, `weights must sum to 100 when there are several destinations, got ${sum}`);
}

// ---- unreachable matches ------------------------------------------------------------------------
//
// Routes are tried in order and the first match wins, so a route can be dead code. Two cases are
// warnings (Istio's too), decided on the config alone:
// - a route after a catch-all route: a catch-all has no `match`, or a match entry with no condition
//   at all (a uri prefix "/" counts as none). Conditions on the proxy (port, sourceLabels,
//   sourceNamespace, gateways) count: such a route catches all only for some proxies, so what
//   follows it is still reachable for others.
// - a match entry identical (ignoring its `name`) to an earlier entry, in this or an earlier route.
// Overlaps short of these (a prefix /a before a prefix /ab) are legitimate ordering, not errors.

interface Matchable<M> {
  readonly match?: readonly M[];
}

function checkReachable<M extends object>(
  routes: readonly Matchable<M>[],
  path: FieldPath,
  isCatchAll: (m: M) => boolean,
  problems: Problems,
): void {
  let catchAll: number | undefined;
  const seen = new Map<string, string>();
  routes.forEach((route, i) => {
    if (catchAll !== undefined) {
      problems.warn(
        [...path, i],
        `can never match: ${path.at(-1) as string}[${catchAll}] before it matches every request`,
      );
      return;
    }
    const matches = route.match ?? [];
    matches.forEach((m, j) => {
      const key = canonical(m);
      const first = seen.get(key);
      if (first !== undefined)
        problems.warn(
          [...path, i, 'match', j],
          `identical to ${first}, which comes first: it can never match`,
        );
      else seen.set(key, `${path.at(-1) as string}[${i}].match[${j}]`);
    });
    if (matches.length === 0 || matches.some(isCatchAll)) catchAll = i;
  });
}

// Key order and the match's own name do not change what it matches.
function canonical(m: object): string {
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => k !== 'name')
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, x]) => [k, sorted(x)]),
    );
  };
  return JSON.stringify(sorted(m));
}

function isHttpCatchAll(m: HTTPMatchRequest): boolean {
  const { name: _name, uri, ignoreUriCase: _case, ...rest } = m;
  const everyPath = uri === undefined || uri.prefix === '/' || uri.prefix === '';
  return everyPath && Object.values(rest).every((v) => v === undefined);
}

function isL4CatchAll(m: L4MatchAttributes): boolean {
  return Object.values(m).every((v) => v === undefined);
}
