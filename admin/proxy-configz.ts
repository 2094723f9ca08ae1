// GET /debug/proxy_configz?proxyID=ID: what one proxy was sent, summarised as rows — clusters
// (service, port, subset, type, load balancing), listeners (address, port, destination), routes
// (virtual host, domains, match, destination) and endpoints (address, health, weight, locality).
// `portolan proxy-config` prints these rows as tables and the dashboard shows them; the full
// resources are at /debug/config_dump.
import type { StreamView } from '../xds/server/observer.js';
import { parseClusterName } from '../xds/generators/names.js';
import { decodeAny } from '../xds/proto/protos.js';
import { CLUSTER, LISTENER, ROUTE } from '../xds/proto/type-urls.js';
import type { ClusterRow, EndpointRow, ListenerRow, ProxyConfigzView, RouteRow } from '../model/admin-api.js';
import { edsz, type EdszView } from './edsz.js';

type Resource = Record<string, unknown>;

export type { ClusterRow, EndpointRow, ListenerRow, ProxyConfigzView, RouteRow } from '../model/admin-api.js';

export function proxyConfigz(stream: StreamView, proxyId: string): ProxyConfigzView {
  const held = (typeUrl: string): Resource[] =>
    stream.heldResources(typeUrl).map((r) => decodeAny(r.typeUrl, r.value));
  return {
    proxyID: proxyId,
    clusters: held(CLUSTER).map(clusterRow),
    listeners: held(LISTENER).map(listenerRow),
    routes: held(ROUTE).flatMap(routeRows),
    endpoints: endpointRows(edsz(stream, proxyId)),
  };
}

export function clusterRow(c: Resource): ClusterRow {
  const name = str(c.name);
  const key = parseClusterName(name);
  return {
    name,
    service: key?.hostname ?? '',
    port: key?.port ?? null,
    subset: key?.subset ?? '',
    direction: key?.direction ?? '',
    // Enum defaults are left out of decoded messages: STATIC and ROUND_ROBIN are the zero values.
    type: str(c.type) || (c.cluster_type ? 'CUSTOM' : 'STATIC'),
    lb: str(c.lb_policy) || 'ROUND_ROBIN',
  };
}

export function listenerRow(l: Resource): ListenerRow {
  const socket = obj(obj(l.address).socket_address);
  const api = obj(obj(l.api_listener).api_listener);
  const isApi = Object.keys(api).length > 0;
  const destinations = isApi
    ? [hcmDestination(api)]
    : list(l.filter_chains).flatMap((fc) =>
        list(fc.filters).map((f) => filterDestination(obj(f.typed_config))),
      );
  return {
    name: str(l.name),
    address: isApi ? null : str(socket.address),
    port: typeof socket.port_value === 'number' ? socket.port_value : null,
    destination: [...new Set(destinations.filter(Boolean))].join(', '),
  };
}

export function routeRows(rc: Resource): RouteRow[] {
  return list(rc.virtual_hosts).flatMap((vh) =>
    list(vh.routes).map((r) => ({
      name: str(rc.name),
      virtualHost: str(vh.name),
      domains: list<string>(vh.domains),
      match: match(obj(r.match)),
      destination: action(r),
    })),
  );
}

export function endpointRows(eds: EdszView): EndpointRow[] {
  return eds.clusters.flatMap((c) =>
    c.localities.flatMap((l) =>
      l.endpoints.map((e) => ({
        cluster: c.clusterName,
        address: e.address,
        port: e.port,
        health: e.health,
        weight: e.weight,
        locality: [l.locality.region, l.locality.zone, l.locality.subZone].filter(Boolean).join('/'),
        priority: l.priority,
      })),
    ),
  );
}

function hcmDestination(hcm: Resource): string {
  const rds = obj(hcm.rds);
  if (rds.route_config_name) return `route ${str(rds.route_config_name)}`;
  if (hcm.route_config) return `route ${str(obj(hcm.route_config).name) || '(inline)'}`;
  return '';
}

function filterDestination(config: Resource): string {
  const type = str(config['@type']);
  if (type.endsWith('HttpConnectionManager')) return hcmDestination(config);
  if (type.endsWith('TcpProxy')) {
    if (config.cluster) return `cluster ${str(config.cluster)}`;
    return list(obj(config.weighted_clusters).clusters)
      .map((w) => `cluster ${str(w.name)} ${str(w.weight)}`)
      .join(', ');
  }
  return '';
}

function match(m: Resource): string {
  const path =
    m.prefix !== undefined
      ? `${str(m.prefix)}*`
      : m.path !== undefined
        ? str(m.path)
        : m.safe_regex
          ? `~${str(obj(m.safe_regex).regex)}`
          : '/*';
  const headers = list(m.headers).map((h) => `${str(h.name)}=${headerValue(h)}`);
  return [path, ...headers].join(' ');
}

function headerValue(h: Resource): string {
  const sm = obj(h.string_match);
  if (sm.exact !== undefined) return str(sm.exact);
  if (sm.prefix !== undefined) return `${str(sm.prefix)}*`;
  if (sm.safe_regex) return `~${str(obj(sm.safe_regex).regex)}`;
  if (h.present_match) return '(present)';
  return '…';
}

function action(r: Resource): string {
  const route = obj(r.route);
  if (route.cluster) return str(route.cluster);
  const weighted = list(obj(route.weighted_clusters).clusters);
  if (weighted.length) return weighted.map((w) => `${str(w.name)} ${weightOf(w.weight)}%`).join(', ');
  if (r.redirect) return 'redirect';
  if (r.direct_response) return `direct response ${str(obj(r.direct_response).status)}`;
  if (r.non_forwarding_action) return 'non-forwarding';
  return '';
}

function weightOf(w: unknown): string {
  return typeof w === 'object' && w !== null ? str((w as { value?: unknown }).value) : str(w);
}

function list<T = Resource>(v: unknown): T[] {
  return Array.isArray(v) ? (v as T[]) : [];
}

function obj(v: unknown): Resource {
  return v && typeof v === 'object' ? (v as Resource) : {};
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}
