// A VirtualService's `tcp` routes for an Envoy tcp_proxy: the first route whose match applies to
// this proxy and port (Istio's order) sends the connection to its destination, or splits by weight.
// Without one, the service's own cluster, as before.
import type { TcpProxy } from '../generated/envoy/extensions/filters/network/tcp_proxy/v3/TcpProxy.js';
import type { VirtualServiceResource } from '../../mesh/types.js';
import { clusterName } from '../generators/names.js';
import { destinationOf } from './http-routes.js';
import type { RouteContext } from './route-context.js';
import { appliesToProxy } from './route-match.js';

export type TcpTarget = Pick<TcpProxy, 'cluster' | 'weighted_clusters'>;

export function tcpTargetForHost(ctx: RouteContext, host: string): TcpTarget {
  const vs = ctx.index.virtualServices.lookup(host, ctx.proxyNamespace, ctx.gateway);
  return (vs && tcpRouteTarget(vs, ctx)) ?? { cluster: clusterName('outbound', ctx.port, '', host) };
}

/** The target of the VirtualService's first tcp route that applies to this proxy and port. */
export function tcpRouteTarget(vs: VirtualServiceResource, ctx: RouteContext): TcpTarget | undefined {
  const route = vs.spec.tcp?.find(
    (r) => !r.match || r.match.length === 0 || r.match.some((m) => appliesToProxy(m, ctx, vs.namespace)),
  );
  if (!route) return undefined;
  const onlyOne = route.route.length === 1;
  const dests = route.route
    .map((d) => ({
      cluster: destinationOf(d.destination, vs.namespace, ctx).cluster,
      weight: onlyOne ? 100 : (d.weight ?? 0),
    }))
    .filter((d) => d.weight > 0);
  const first = dests[0];
  if (dests.length === 1 && first) return { cluster: first.cluster };
  return { weighted_clusters: { clusters: dests.map((d) => ({ name: d.cluster, weight: d.weight })) } };
}

/** A stat prefix / name for the target: its cluster, or the first of a split. */
export function tcpTargetName(t: TcpTarget): string {
  return t.cluster ?? t.weighted_clusters?.clusters?.[0]?.name ?? 'tcp';
}
