// What a kind of client cannot render of the mesh's VirtualServices (and of the DestinationRules'
// route-level hash policies), per resource and field, for /debug/configz. A pure function over the
// mesh config; it mirrors the choices in http-routes.ts, route-match.ts, retries.ts, hash-policy.ts.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { HTTPRoute, LoadBalancerSettings, TrafficPolicy } from '../../mesh/types.js';
import { GRPC_MAX_RETRIES, GRPC_RETRY_ON, retryTokens } from './retries.js';
import type { RouteClient } from './route-context.js';

export interface RouteLimitation {
  /** `Kind/namespace/name`. */
  readonly resource: string;
  /** Field path inside the resource, e.g. `spec.http[0].mirror`. */
  readonly field: string;
  readonly clients: readonly RouteClient[];
  readonly reason: string;
}

const GRPC: readonly RouteClient[] = ['grpc'];
const ALL: readonly RouteClient[] = ['envoy', 'grpc'];

export function routeLimitations(config: MeshConfig): RouteLimitation[] {
  const out: RouteLimitation[] = [];
  for (const vs of config.virtualServices) {
    const resource = `VirtualService/${vs.namespace}/${vs.name}`;
    const add = (field: string, clients: readonly RouteClient[], reason: string): void => {
      out.push({ resource, field, clients, reason });
    };
    (vs.spec.http ?? []).forEach((r, i) => httpRouteLimitations(r, `spec.http[${i}]`, add));
    (vs.spec.tcp ?? []).forEach((r, i) => {
      add(`spec.tcp[${i}]`, GRPC, 'gRPC clients speak HTTP/2 only: tcp routes apply to Envoy');
      (r.match ?? []).forEach((m, j) => {
        if (m.destinationSubnets)
          add(
            `spec.tcp[${i}].match[${j}].destinationSubnets`,
            ALL,
            'not rendered: the match applies whatever the destination address',
          );
      });
    });
    if (vs.spec.tls)
      add(
        'spec.tls',
        ALL,
        'tls (SNI) routes are not rendered for sidecars or gRPC clients; a gateway TLS passthrough server forwards to the first destination of the first one',
      );
  }
  for (const dr of config.destinationRules) {
    const resource = `DestinationRule/${dr.namespace}/${dr.name}`;
    const policies: [string, TrafficPolicy | undefined][] = [
      ['spec.trafficPolicy', dr.spec.trafficPolicy],
      ...(dr.spec.subsets ?? []).map((s, i): [string, TrafficPolicy | undefined] => [
        `spec.subsets[${i}].trafficPolicy`,
        s.trafficPolicy,
      ]),
    ];
    for (const [path, policy] of policies) {
      hashLimitations(policy?.loadBalancer, `${path}.loadBalancer`, resource, out);
      (policy?.portLevelSettings ?? []).forEach((p, i) =>
        hashLimitations(p.loadBalancer, `${path}.portLevelSettings[${i}].loadBalancer`, resource, out),
      );
    }
  }
  return out;
}

type Add = (field: string, clients: readonly RouteClient[], reason: string) => void;

function httpRouteLimitations(r: HTTPRoute, path: string, add: Add): void {
  (r.match ?? []).forEach((m, j) => {
    const at = `${path}.match[${j}]`;
    if (m.queryParams)
      add(
        `${at}.queryParams`,
        GRPC,
        'gRPC requests have no query string: this match never applies to gRPC clients',
      );
    if (m.scheme)
      add(`${at}.scheme`, GRPC, 'gRPC clients cannot match the scheme: this match never applies to them');
    if (m.authority)
      add(
        `${at}.authority`,
        GRPC,
        'gRPC clients cannot match the authority: this match never applies to them',
      );
    if (m.method)
      add(
        `${at}.method`,
        GRPC,
        'decided once against POST (every gRPC call is a POST), not sent to the client',
      );
  });
  if (r.redirect) add(`${path}.redirect`, GRPC, 'gRPC has no redirects (gRFC A28): the route is left out');
  if (r.directResponse)
    add(`${path}.directResponse`, GRPC, 'gRPC has no direct responses (gRFC A28): the route is left out');
  if (r.rewrite) add(`${path}.rewrite`, GRPC, 'gRPC clients do not rewrite requests (gRFC A28)');
  if (r.headers) add(`${path}.headers`, GRPC, 'gRPC clients do not add or remove headers per route');
  (r.route ?? []).forEach((d, j) => {
    if (d.headers)
      add(`${path}.route[${j}].headers`, GRPC, 'gRPC clients do not add or remove headers per route');
  });
  if (r.mirror) add(`${path}.mirror`, GRPC, 'gRPC clients do not mirror requests');
  if (r.mirrorPercent !== undefined)
    add(`${path}.mirrorPercent`, GRPC, 'gRPC clients do not mirror requests');
  if (r.mirrorPercentage) add(`${path}.mirrorPercentage`, GRPC, 'gRPC clients do not mirror requests');
  if (r.mirrors) add(`${path}.mirrors`, GRPC, 'gRPC clients do not mirror requests');
  if (r.fault?.abort?.httpStatus !== undefined)
    add(
      `${path}.fault.abort.httpStatus`,
      GRPC,
      'gRPC clients fail the call with the gRPC status gRFC A33 maps the HTTP status to (503 → UNAVAILABLE)',
    );
  if (r.corsPolicy) add(`${path}.corsPolicy`, ALL, 'not rendered (Portolan renders no CORS policy)');
  const retries = r.retries;
  if (retries) {
    if (retries.perTryTimeout !== undefined)
      add(`${path}.retries.perTryTimeout`, GRPC, 'gRFC A44 has no per-try timeout: ignored by gRPC clients');
    if ((retries.attempts ?? 0) > GRPC_MAX_RETRIES)
      add(
        `${path}.retries.attempts`,
        GRPC,
        `gRFC A44 allows at most 5 attempts: gRPC clients retry at most ${GRPC_MAX_RETRIES} times`,
      );
    const dropped = retryTokens(retries.retryOn).filter((t) => !GRPC_RETRY_ON.includes(t));
    if (dropped.length > 0 && (retries.attempts ?? 0) > 0)
      add(
        `${path}.retries.retryOn`,
        GRPC,
        `gRPC clients retry on gRPC status codes only (${GRPC_RETRY_ON.join(', ')}); dropped: ${dropped.join(', ')}`,
      );
    if (retries.retryRemoteLocalities !== undefined)
      add(`${path}.retries.retryRemoteLocalities`, ALL, 'not rendered');
  }
}

function hashLimitations(
  lb: LoadBalancerSettings | undefined,
  path: string,
  resource: string,
  out: RouteLimitation[],
): void {
  const hash = lb?.consistentHash;
  if (!hash || hash.httpHeaderName) return;
  const field = hash.httpCookie
    ? 'httpCookie'
    : hash.useSourceIp
      ? 'useSourceIp'
      : hash.httpQueryParameterName
        ? 'httpQueryParameterName'
        : undefined;
  if (field)
    out.push({
      resource,
      field: `${path}.consistentHash.${field}`,
      clients: GRPC,
      reason:
        'gRFC A42 hashes on a header only: gRPC clients get no hash policy, so picks are random on the ring',
    });
}
