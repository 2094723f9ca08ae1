// Whether a route's destination names a cluster the proxy is sent. The cluster generators serve
// `outbound|PORT|SUBSET|HOST` only for a service the catalog knows, on one of its ports, with a
// subset some DestinationRule the proxy sees defines (and, for gRPC, not NONE-resolved); a route to
// anything else names BlackHoleCluster instead, which every client is sent: the request fails with
// 503 (Envoy) or UNAVAILABLE (gRPC), as Istio's route to a cluster that does not exist fails, and no
// route names a cluster the proxy does not have (docs/push.md). Mirrors
// xds/generators/envoy/clusters.ts and xds/generators/grpc/cluster.ts.
import { findPort } from '../../model/service.js';
import type { RouteContext } from './route-context.js';
import { findSubset } from './subsets.js';

export function clusterIsSent(ctx: RouteContext, host: string, port: number, subset: string): boolean {
  const service = ctx.catalog.service(host);
  if (!service || !findPort(service, port)) return false;
  if (ctx.client === 'grpc' && service.resolution === 'NONE') return false;
  return subset === '' || findSubset(ctx.index, ctx.catalog, host, subset, ctx.proxyNamespace) !== undefined;
}
