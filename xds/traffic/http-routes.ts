// The one VirtualService → routes translator, shared by Envoy sidecars (per-port RDS, http_proxy),
// Envoy gateways and proxyless gRPC RDS. Routes keep the VirtualService's order; each `match` entry
// becomes its own route with the same action (Istio's rendering). What a kind of client cannot do is
// left out of its routes here and listed for /debug/configz by route-limitations.ts.
import type { HeaderValueOption } from '../generated/envoy/config/core/v3/HeaderValueOption.js';
import type { RedirectAction } from '../generated/envoy/config/route/v3/RedirectAction.js';
import type { Route } from '../generated/envoy/config/route/v3/Route.js';
import type { RouteAction } from '../generated/envoy/config/route/v3/RouteAction.js';
import type {
  Destination,
  HeaderOperations,
  Headers,
  HTTPMatchRequest,
  HTTPRedirect,
  HTTPRoute,
  VirtualServiceResource,
} from '../../mesh/types.js';
import { BLACKHOLE_CLUSTER, clusterName } from '../generators/names.js';
import { durationOf, faultPerFilterConfig, fractionalPercent } from './fault.js';
import { hashPolicyFor } from './hash-policy.js';
import { resolveHost } from '../../mesh/hosts.js';
import { retryPolicy } from './retries.js';
import type { RouteContext } from './route-context.js';
import { routeMatch } from './route-match.js';
import { clusterIsSent } from './sent-clusters.js';

/** The routes for traffic to `host` on ctx.port: its VirtualService's, else the default route. */
export function routesForHost(ctx: RouteContext, host: string): Route[] {
  const vs = ctx.index.virtualServices.lookup(host, ctx.proxyNamespace, ctx.gateway);
  const routes = vs ? virtualServiceRoutes(vs, ctx) : [];
  // A VirtualService with nothing for this port and proxy (tcp only, or every match elsewhere)
  // leaves the host's default route in place rather than a host that answers nothing.
  return routes.length > 0 ? routes : [defaultRoute(ctx, host)];
}

/** Today's default: everything to `outbound|PORT||HOST`, hashed if a DestinationRule asks for it. */
export function defaultRoute(ctx: RouteContext, host: string): Route {
  const hash = hashPolicyFor(ctx, host, ctx.port, '');
  return {
    // Envoy's default route was always named; gRPC's was not, and stays byte-for-byte as it was.
    ...(ctx.client === 'envoy' && { name: 'default' }),
    match: { prefix: '/' },
    route: {
      cluster: clusterName('outbound', ctx.port, '', host),
      ...(hash.length > 0 && { hash_policy: hash }),
    },
  };
}

export function virtualServiceRoutes(vs: VirtualServiceResource, ctx: RouteContext): Route[] {
  const out: Route[] = [];
  (vs.spec.http ?? []).forEach((r, i) => {
    // gRPC has no redirect or direct response (gRFC A28 NACKs them): the route is left out.
    if (ctx.client === 'grpc' && !r.route) return;
    const matches: (HTTPMatchRequest | undefined)[] =
      r.match && r.match.length > 0 ? [...r.match] : [undefined];
    for (const m of matches) {
      const match = routeMatch(m, ctx, vs.namespace);
      if (!match) continue;
      const name = [r.name ?? `${vs.namespace}/${vs.name}/http[${i}]`, m?.name].filter(Boolean).join('.');
      out.push({ name, match, ...routeBody(r, m, vs.namespace, ctx) });
    }
  });
  return out;
}

function routeBody(
  r: HTTPRoute,
  m: HTTPMatchRequest | undefined,
  namespace: string,
  ctx: RouteContext,
): Route {
  const envoy = ctx.client === 'envoy';
  const common: Route = {
    ...(r.fault && { typed_per_filter_config: faultPerFilterConfig(r.fault) }),
  };
  if (r.redirect) return { ...common, redirect: redirectAction(r.redirect), ...headerFields(r.headers) };
  if (r.directResponse) {
    const body = r.directResponse.body;
    return {
      ...common,
      direct_response: {
        status: r.directResponse.status,
        ...(body?.string !== undefined && { body: { inline_string: body.string } }),
        ...(body?.bytes !== undefined && { body: { inline_bytes: Buffer.from(body.bytes, 'base64') } }),
      },
      ...headerFields(r.headers),
    };
  }
  const action = routeAction(r, m, namespace, ctx);
  if (!envoy) return { ...common, route: action };
  // A single destination's own header operations apply to the whole route.
  const live = (r.route ?? []).filter((d, _, all) => all.length === 1 || (d.weight ?? 0) > 0);
  const destHeaders = live.length === 1 ? live[0]?.headers : undefined;
  return {
    ...common,
    route: action,
    ...mergeHeaderFields(headerFields(r.headers), headerFields(destHeaders)),
  };
}

function routeAction(
  r: HTTPRoute,
  m: HTTPMatchRequest | undefined,
  namespace: string,
  ctx: RouteContext,
): RouteAction {
  const envoy = ctx.client === 'envoy';
  // A lone destination takes everything whatever its weight; among several, an omitted weight is 0.
  const onlyOne = (r.route ?? []).length === 1;
  const dests = oneBlackHole(
    (r.route ?? [])
      .map((d) => ({
        ...destinationOf(d.destination, namespace, ctx),
        weight: onlyOne ? 100 : (d.weight ?? 0),
        headers: d.headers,
      }))
      .filter((d) => d.weight > 0),
  );
  const first = dests[0];
  const target: RouteAction =
    dests.length === 1 && first
      ? { cluster: first.cluster }
      : {
          weighted_clusters: {
            clusters: dests.map((d) => ({
              name: d.cluster,
              weight: { value: d.weight },
              ...(envoy && headerFields(d.headers)),
            })),
          },
        };
  // One hash policy for the route: the destinations' when they all agree (Istio hashes per route).
  const policies = dests.map((d) => hashPolicyFor(ctx, d.host, d.port, d.subset));
  const agreed = policies.every((p) => JSON.stringify(p) === JSON.stringify(policies[0]));
  const hash = agreed ? (policies[0] ?? []) : [];
  const retry = retryPolicy(r.retries, ctx.client);
  const action: RouteAction = {
    ...target,
    ...(hash.length > 0 && { hash_policy: hash }),
    ...(retry && { retry_policy: retry }),
  };
  if (envoy) {
    // Istio disables Envoy's 15 s default: no timeout unless the VirtualService sets one.
    action.timeout = durationOf(r.timeout ?? '0s');
    // Istio: `mirrorPercentage` over the deprecated `mirrorPercent`, 100 % when neither is set, and
    // an explicit 0 % mirrors nothing (the policy is left out rather than sent at 0).
    const mirrorPercentage =
      r.mirrorPercentage ?? (r.mirrorPercent !== undefined ? { value: r.mirrorPercent } : undefined);
    const mirrors = [
      ...(r.mirror ? [{ destination: r.mirror, percentage: mirrorPercentage }] : []),
      ...(r.mirrors ?? []),
    ]
      .filter((mp) => mp.percentage === undefined || mp.percentage.value > 0)
      .map((mp) => ({
        cluster: destinationOf(mp.destination, namespace, ctx).cluster,
        percentage: mp.percentage,
      }))
      // A copy sent nowhere is no copy: a mirror whose cluster the proxy is not sent is left out.
      .filter((mp) => mp.cluster !== BLACKHOLE_CLUSTER);
    if (mirrors.length > 0)
      action.request_mirror_policies = mirrors.map((mp) => ({
        cluster: mp.cluster,
        runtime_fraction: { default_value: fractionalPercent(mp.percentage) },
      }));
    Object.assign(action, rewrite(r, m));
  } else if (r.timeout !== undefined) {
    // gRFC A31: the route's timeout is max_stream_duration (grpc_timeout_header_max caps the caller's deadline).
    const d = durationOf(r.timeout);
    action.max_stream_duration = { max_stream_duration: d, grpc_timeout_header_max: d };
  }
  return action;
}

/** Destinations gone to BlackHoleCluster share one weighted entry (a cluster is named once). */
function oneBlackHole<D extends { cluster: string; weight: number; headers?: Headers }>(dests: D[]): D[] {
  const holes = dests.filter((d) => d.cluster === BLACKHOLE_CLUSTER);
  if (holes.length < 2) return dests;
  const weight = holes.reduce((sum, d) => sum + d.weight, 0);
  const out: D[] = [];
  for (const d of dests)
    if (d.cluster !== BLACKHOLE_CLUSTER) out.push(d);
    else if (d === holes[0]) out.push({ ...d, weight, headers: undefined });
  return out;
}

function rewrite(r: HTTPRoute, m: HTTPMatchRequest | undefined): RouteAction {
  const rw = r.rewrite;
  if (!rw) return {};
  const out: RouteAction = {};
  if (rw.authority !== undefined) out.host_rewrite_literal = rw.authority;
  if (rw.uriRegexRewrite)
    out.regex_rewrite = {
      pattern: { regex: rw.uriRegexRewrite.match },
      substitution: rw.uriRegexRewrite.rewrite,
    };
  else if (rw.uri !== undefined) {
    // A regex-matched path is replaced whole; otherwise the matched prefix (or exact path) is.
    const regex = m?.uri?.regex;
    if (regex !== undefined) out.regex_rewrite = { pattern: { regex }, substitution: rw.uri };
    else out.prefix_rewrite = rw.uri;
  }
  return out;
}

export interface ResolvedDestination {
  readonly host: string;
  readonly port: number;
  readonly subset: string;
  readonly cluster: string;
}

/**
 * `outbound|PORT|SUBSET|HOST` of a destination. The port is the one named, else the service's only
 * port, else the port the traffic came in on (Istio's rule). A destination whose cluster the proxy
 * is not sent (an unknown host or port, an undefined subset: sent-clusters.ts) goes to
 * BlackHoleCluster: the traffic fails visibly instead of silently going elsewhere.
 */
export function destinationOf(d: Destination, namespace: string, ctx: RouteContext): ResolvedDestination {
  const host = resolveHost(d.host, namespace);
  const ports = ctx.catalog.service(host)?.ports ?? [];
  const only = ports.length === 1 ? ports[0]?.number : undefined;
  const port = d.port?.number ?? only ?? ctx.port;
  const subset = d.subset ?? '';
  const cluster = clusterIsSent(ctx, host, port, subset)
    ? clusterName('outbound', port, subset, host)
    : BLACKHOLE_CLUSTER;
  return { host, port, subset, cluster };
}

const REDIRECT_CODES: Readonly<Record<number, NonNullable<RedirectAction['response_code']>>> = {
  301: 'MOVED_PERMANENTLY',
  302: 'FOUND',
  303: 'SEE_OTHER',
  307: 'TEMPORARY_REDIRECT',
  308: 'PERMANENT_REDIRECT',
};

function redirectAction(r: HTTPRedirect): RedirectAction {
  const scheme = r.scheme;
  const port =
    r.port ?? (r.derivePort === 'FROM_PROTOCOL_DEFAULT' ? (scheme === 'https' ? 443 : 80) : undefined);
  return {
    ...(r.uri !== undefined && { path_redirect: r.uri }),
    ...(r.authority !== undefined && { host_redirect: r.authority }),
    ...(scheme !== undefined && { scheme_redirect: scheme }),
    ...(port !== undefined && { port_redirect: port }),
    response_code: REDIRECT_CODES[r.redirectCode ?? 301] ?? 'MOVED_PERMANENTLY',
  };
}

interface HeaderFields {
  request_headers_to_add?: HeaderValueOption[];
  request_headers_to_remove?: string[];
  response_headers_to_add?: HeaderValueOption[];
  response_headers_to_remove?: string[];
}

function headerFields(h: Headers | undefined): HeaderFields {
  if (!h) return {};
  const out: HeaderFields = {};
  const req = operations(h.request);
  const res = operations(h.response);
  if (req.add.length > 0) out.request_headers_to_add = req.add;
  if (req.remove.length > 0) out.request_headers_to_remove = req.remove;
  if (res.add.length > 0) out.response_headers_to_add = res.add;
  if (res.remove.length > 0) out.response_headers_to_remove = res.remove;
  return out;
}

// `set` overwrites, `add` appends (Istio's meaning of the two).
function operations(ops: HeaderOperations | undefined): { add: HeaderValueOption[]; remove: string[] } {
  const add: HeaderValueOption[] = [
    ...Object.entries(ops?.set ?? {}).map(([key, value]) => ({
      header: { key: key.toLowerCase(), value },
      append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' as const,
    })),
    ...Object.entries(ops?.add ?? {}).map(([key, value]) => ({
      header: { key: key.toLowerCase(), value },
      append_action: 'APPEND_IF_EXISTS_OR_ADD' as const,
    })),
  ];
  return { add, remove: (ops?.remove ?? []).map((k) => k.toLowerCase()) };
}

function mergeHeaderFields(a: HeaderFields, b: HeaderFields): HeaderFields {
  const out: HeaderFields = {};
  const keys = [
    'request_headers_to_add',
    'request_headers_to_remove',
    'response_headers_to_add',
    'response_headers_to_remove',
  ] as const;
  for (const k of keys) {
    const merged = [...(a[k] ?? []), ...(b[k] ?? [])];
    if (merged.length > 0) (out as Record<string, unknown>)[k] = merged;
  }
  return out;
}
