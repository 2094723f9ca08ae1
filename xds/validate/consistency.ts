// The cross-resource check of one proxy's config (after go-control-plane's snapshot consistency
// check): every RDS name a listener uses is served, every cluster a route, tcp_proxy or jwt_authn
// JWKS fetch names exists,
// every EDS cluster has a ClusterLoadAssignment — plus two rules Envoy enforces at load: no two
// bound listeners on one address, no domain claimed by two virtual hosts of one route configuration.
import { decodeAny } from '../proto/protos.js';
import type { EncodedResource } from '../proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';

type Obj = Record<string, unknown>;

const HCM_TYPE =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const TCP_PROXY_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy';
const JWT_AUTHN_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication';

/** The resources one proxy holds, per type URL. */
export type ProxyResources = ReadonlyMap<string, readonly EncodedResource[]>;

export function checkConsistency(resources: ProxyResources): string[] {
  const decode = (typeUrl: string): Obj[] =>
    (resources.get(typeUrl) ?? []).map((r) => decodeAny(r.typeUrl, r.value));
  const listeners = decode(LISTENER);
  const routes = decode(ROUTE);
  const clusters = decode(CLUSTER);
  const assignments = decode(ENDPOINT);
  const problems: string[] = [];

  const routeNames = new Set(routes.map((r) => str(r.name ?? '')));
  const clusterNames = new Set(clusters.map((c) => str(c.name ?? '')));
  const claNames = new Set(assignments.map((a) => str(a.cluster_name ?? '')));
  const needCluster = (cluster: string, where: string): void => {
    if (!clusterNames.has(cluster)) problems.push(`${where} names cluster ${cluster}, which is not served`);
  };

  const addresses = new Map<string, string>();
  for (const l of listeners) {
    const name = str(l.name ?? '');
    const sa = (l.address as Obj | undefined)?.socket_address as Obj | undefined;
    const bound = (l.bind_to_port as Obj | undefined)?.value !== false;
    if (sa && bound) {
      const key = `${str(sa.address)}:${str(sa.port_value)}`;
      const other = addresses.get(key);
      if (other) problems.push(`listeners ${other} and ${name} both bind ${key}`);
      addresses.set(key, name);
    }
    walk(l, (node) => {
      if (node['@type'] === HCM_TYPE) {
        const rds = (node.rds as Obj | undefined)?.route_config_name;
        if (typeof rds === 'string' && !routeNames.has(rds))
          problems.push(`listener ${name} uses route configuration ${rds}, which is not served`);
        const inline = node.route_config as Obj | undefined;
        if (inline) checkRoute(inline, `listener ${name}`, needCluster, problems);
      }
      if (node['@type'] === TCP_PROXY_TYPE && typeof node.cluster === 'string')
        needCluster(node.cluster, `listener ${name} (tcp_proxy)`);
      if (node['@type'] === JWT_AUTHN_TYPE)
        for (const [provider, p] of Object.entries(
          (node.providers as Record<string, Obj> | undefined) ?? {},
        )) {
          const uri = (p.remote_jwks as Obj | undefined)?.http_uri as Obj | undefined;
          if (typeof uri?.cluster === 'string')
            needCluster(uri.cluster, `listener ${name} (jwt_authn ${provider})`);
        }
    });
  }
  for (const r of routes) checkRoute(r, `route configuration ${str(r.name)}`, needCluster, problems);
  for (const c of clusters) {
    if (c.type !== 'EDS') continue;
    const serviceName = str((c.eds_cluster_config as Obj | undefined)?.service_name ?? c.name ?? '');
    if (!claNames.has(serviceName))
      problems.push(`EDS cluster ${str(c.name)} has no ClusterLoadAssignment ${serviceName}`);
  }
  return problems;
}

function checkRoute(
  config: Obj,
  where: string,
  needCluster: (cluster: string, where: string) => void,
  problems: string[],
): void {
  const domains = new Map<string, string>();
  for (const vh of (config.virtual_hosts as Obj[] | undefined) ?? []) {
    const vhName = str(vh.name ?? '');
    for (const d of (vh.domains as string[] | undefined) ?? []) {
      const other = domains.get(d);
      if (other !== undefined)
        problems.push(`${where}: domain ${d} is in virtual hosts ${other} and ${vhName}`);
      domains.set(d, vhName);
    }
    for (const route of (vh.routes as Obj[] | undefined) ?? []) {
      const action = route.route as Obj | undefined;
      if (!action) continue;
      if (typeof action.cluster === 'string') needCluster(action.cluster, `${where} virtual host ${vhName}`);
      const weighted = (action.weighted_clusters as Obj | undefined)?.clusters as Obj[] | undefined;
      for (const w of weighted ?? []) needCluster(str(w.name), `${where} virtual host ${vhName}`);
    }
  }
}

function walk(value: unknown, visit: (node: Obj) => void): void {
  if (Array.isArray(value)) {
    for (const v of value) walk(v, visit);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  visit(value as Obj);
  for (const v of Object.values(value)) walk(v, visit);
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '';
}
