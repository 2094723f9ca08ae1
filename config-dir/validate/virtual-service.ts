// VirtualService: validated and kept for the traffic-management work; the essentials are checked
// (hosts, destinations, weights, durations, one-of fields), the rest is type-checked only.
import type { FieldPath } from '../parse.js';
import type { HTTPRoute, RouteDestination, StringMatch, VirtualServiceSpec } from '../types.js';
import {
  duration,
  hostname,
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

/** A StringMatch for uri/method/...: exactly one of exact, prefix, regex. */
const stringMatch: Check<StringMatch> = obj(
  { exact: str(), prefix: str(), regex: str() },
  {
    refine: (m, path, problems) => {
      const set = MATCH_KINDS.filter((k) => m[k] !== undefined);
      if (set.length !== 1) problems.error(path, `exactly one of ${MATCH_KINDS.join(', ')} must be set`);
    },
  },
);

/** In header and query maps an empty match means "present", so at most one kind. */
const presenceMatch: Check<StringMatch> = obj(
  { exact: str(), prefix: str(), regex: str() },
  { refine: (m, path, problems) => atMostOne(m, MATCH_KINDS, path, problems) },
);

const destination = obj({ host: hostname, subset: str(), port: portSelector }, { required: ['host'] });

const headerOperations = obj({ set: stringMap, add: stringMap, remove: arrayOf(str()) });
const headers = obj({ request: headerOperations, response: headerOperations });

const httpMatch = obj({
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
});

const weight = int(0, 100);

const httpRouteDestination = obj({ destination, weight, headers }, { required: ['destination'] });
const routeDestination = obj({ destination, weight }, { required: ['destination'] });

const redirect = obj(
  {
    uri: str(),
    authority: str(),
    port: portNumber,
    derivePort: oneOf(['FROM_PROTOCOL_DEFAULT', 'FROM_REQUEST_PORT']),
    scheme: str(),
    redirectCode: int(300, 399),
  },
  { refine: (r, path, problems) => atMostOne(r, ['port', 'derivePort'], path, problems) },
);

const directResponse = obj(
  {
    status: int(200, 599),
    body: obj(
      { string: str(), bytes: str() },
      { refine: (b, path, problems) => atMostOne(b, ['string', 'bytes'], path, problems) },
    ),
  },
  { required: ['status'] },
);

const rewrite = obj(
  {
    uri: str(),
    authority: str(),
    uriRegexRewrite: obj({ match: str(), rewrite: str() }, { required: ['match', 'rewrite'] }),
  },
  { refine: (r, path, problems) => atMostOne(r, ['uri', 'uriRegexRewrite'], path, problems) },
);

const retries = obj({
  attempts: int(0, 2_147_483_647),
  perTryTimeout: duration,
  retryOn: str(),
  retryRemoteLocalities: bool,
});

const fault = obj(
  {
    delay: obj({ fixedDelay: duration, percentage: percent }, { required: ['fixedDelay'] }),
    abort: obj(
      { httpStatus: int(200, 599), grpcStatus: str({ nonEmpty: true }), percentage: percent },
      {
        refine: (a, path, problems) => {
          if (a.httpStatus === undefined && a.grpcStatus === undefined)
            problems.error(path, 'one of httpStatus, grpcStatus is required');
          atMostOne(a, ['httpStatus', 'grpcStatus'], path, problems);
        },
      },
    ),
  },
  {
    refine: (f, path, problems) => {
      if (f.delay === undefined && f.abort === undefined)
        problems.error(path, 'one of delay, abort is required');
    },
  },
);

const corsPolicy = obj({
  allowOrigins: arrayOf(stringMatch),
  allowMethods: arrayOf(str()),
  allowHeaders: arrayOf(str()),
  exposeHeaders: arrayOf(str()),
  maxAge: duration,
  allowCredentials: bool,
});

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
    mirrorPercentage: percent,
    mirrors: arrayOf(obj({ destination, percentage: percent }, { required: ['destination'] })),
    corsPolicy,
    headers,
  },
  {
    refine: (r, path, problems) => {
      const actions = (['route', 'redirect', 'directResponse'] as const).filter((k) => r[k] !== undefined);
      if (actions.length === 0) problems.error(path, 'one of route, redirect, directResponse is required');
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
  { match: arrayOf(obj(l4Match)), route: arrayOf(routeDestination, { nonEmpty: true }) },
  {
    required: ['route'],
    refine: (r, path, problems) => checkWeights(r.route ?? [], [...path, 'route'], problems),
  },
);

const tlsRoute = obj(
  {
    match: arrayOf(
      obj({ sniHosts: arrayOf(hostOrWildcard, { nonEmpty: true }), ...l4Match }, { required: ['sniHosts'] }),
      {
        nonEmpty: true,
      },
    ),
    route: arrayOf(routeDestination, { nonEmpty: true }),
  },
  {
    required: ['match', 'route'],
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
    refine: (vs, path, problems) => {
      const routes = (vs.http?.length ?? 0) + (vs.tls?.length ?? 0) + (vs.tcp?.length ?? 0);
      if (routes === 0) problems.error(path, 'at least one http, tls or tcp route is required');
    },
  },
);

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
