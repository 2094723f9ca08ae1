// Everything a golden node holds, built the way the ADS server builds it: the server's generator
// table (xds/generators/index.ts), a GenerateContext as the server makes one per stream, and the
// names a client of that kind subscribes to. Envoy: the LDS and CDS wildcards, then the RDS and EDS
// names they reference (xds/validate/envoy-resource-set.ts, what the push consistency check builds).
// gRPC: its listeners by name (and the wildcard, for every target), then the route configurations,
// clusters and load assignments they lead to, as a gRPC client follows them.
import type { GenerateContext } from '../../xds/generators/generator.js';
import { generateContext as serverContext } from '../../xds/generators/serving-view.js';
import { DEFAULT_GENERATORS, GeneratorTable } from '../../xds/generators/index.js';
import { decodeAny } from '../../xds/proto/protos.js';
import { proxyFromNode } from '../../xds/proxy/proxy.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../xds/proto/type-urls.js';
import { envoyResourceSet } from '../../xds/validate/envoy-resource-set.js';
import type { GoldenCase } from './cases.js';

type Obj = Record<string, unknown>;

/** The GenerateContext the ADS server gives a stream's generators (AdsServer.context). */
export function generateContext(c: GoldenCase): GenerateContext {
  return serverContext({
    proxy: proxyFromNode(c.node),
    catalog: c.catalog,
    config: c.config,
    ...(c.trustDomain && { trustDomain: c.trustDomain }),
  });
}

/** The server's table, unwrapped: the golden test runs the validator itself, on every resource. */
export function serverGenerators(): GeneratorTable {
  return new GeneratorTable(DEFAULT_GENERATORS, false);
}

export function resourceSet(c: GoldenCase): Map<string, EncodedResource[]> {
  const table = serverGenerators();
  const ctx = generateContext(c);
  if (ctx.proxy.kind === 'envoy') return envoyResourceSet(table, ctx);
  const build = (typeUrl: string, referenced: Iterable<string>): EncodedResource[] => {
    const g = table.find('grpc', typeUrl);
    if (!g) throw new Error(`no gRPC generator for ${typeUrl}`);
    const wildcard = c.wildcard && (typeUrl === LISTENER || typeUrl === CLUSTER) ? g.wildcardNames(ctx) : [];
    const names = new Set([...wildcard, ...(c.named[typeUrl] ?? []), ...referenced]);
    return [...names].flatMap((n) => g.build(ctx, n) ?? []);
  };
  const listeners = build(LISTENER, []);
  const routes = build(ROUTE, decoded(listeners).flatMap(routeConfigNames));
  const clusters = build(CLUSTER, decoded(routes).flatMap(routedClusters));
  const endpoints = build(ENDPOINT, decoded(clusters).flatMap(edsServiceNames));
  return new Map([
    [CLUSTER, clusters],
    [ENDPOINT, endpoints],
    [LISTENER, listeners],
    [ROUTE, routes],
  ]);
}

function decoded(resources: readonly EncodedResource[]): Obj[] {
  return resources.map((r) => decodeAny(r.typeUrl, r.value));
}

/** The RDS names an api_listener's HttpConnectionManager fetches. */
function routeConfigNames(listener: Obj): string[] {
  const hcm = (listener.api_listener as Obj | undefined)?.api_listener as Obj | undefined;
  const name = (hcm?.rds as Obj | undefined)?.route_config_name;
  return typeof name === 'string' ? [name] : [];
}

/** The clusters a route configuration's routes send to (single or weighted). */
function routedClusters(config: Obj): string[] {
  const out: string[] = [];
  for (const vh of (config.virtual_hosts as Obj[] | undefined) ?? [])
    for (const route of (vh.routes as Obj[] | undefined) ?? []) {
      const action = route.route as Obj | undefined;
      if (typeof action?.cluster === 'string') out.push(action.cluster);
      const weighted = (action?.weighted_clusters as Obj | undefined)?.clusters as Obj[] | undefined;
      for (const w of weighted ?? []) if (typeof w.name === 'string') out.push(w.name);
    }
  return out;
}

/** The EDS name of an EDS cluster (its service_name, else its own name). */
function edsServiceNames(cluster: Obj): string[] {
  if (cluster.type !== 'EDS') return [];
  const serviceName = (cluster.eds_cluster_config as Obj | undefined)?.service_name;
  return [typeof serviceName === 'string' && serviceName ? serviceName : String(cluster.name)];
}
