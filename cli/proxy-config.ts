// `portolan proxy-config clusters|listeners|routes|endpoints|all PROXY_ID`: what one proxy was sent,
// as tables (names, types, ports, destinations, endpoints with health), or the full resources with
// `-o json|yaml`. Reads the running server's /debug/config_dump (either shape: Envoy's admin dump,
// or the per-type list other clients get) and /debug/edsz.
import { stringify } from 'yaml';
import type { EdszView } from '../admin/edsz.js';
import { parseClusterName } from '../xds/generators/names.js';
import { getJson } from './admin-client.js';
import { formatTable } from './table.js';

export const CONFIG_KINDS = ['clusters', 'listeners', 'routes', 'endpoints', 'all'] as const;
export type ConfigKind = (typeof CONFIG_KINDS)[number];
export type ConfigFormat = 'table' | 'json' | 'yaml';

type Resource = Record<string, unknown>;

/** A proxy's resources by kind, whichever shape its dump came in. */
export interface ProxyResources {
  readonly clusters: readonly Resource[];
  readonly listeners: readonly Resource[];
  readonly routes: readonly Resource[];
  readonly endpoints: readonly Resource[];
}

export async function proxyConfig(
  httpAddr: string,
  kind: ConfigKind,
  proxyId: string,
  format: ConfigFormat,
): Promise<string> {
  const id = encodeURIComponent(proxyId);
  const dump = await getJson<unknown>(httpAddr, `/debug/config_dump?proxyID=${id}`);
  const resources = fromDump(dump);
  const kinds = kind === 'all' ? (['clusters', 'listeners', 'routes', 'endpoints'] as const) : [kind];
  if (format !== 'table') {
    const body = Object.fromEntries(kinds.map((k) => [k, resources[k]]));
    return format === 'json' ? `${JSON.stringify(body, null, 2)}\n` : stringify(body);
  }
  const eds = kinds.includes('endpoints')
    ? await getJson<EdszView>(httpAddr, `/debug/edsz?proxyID=${id}`)
    : undefined;
  const sections = kinds.map((k) => {
    const table =
      k === 'clusters'
        ? clusterTable(resources.clusters)
        : k === 'listeners'
          ? listenerTable(resources.listeners)
          : k === 'routes'
            ? routeTable(resources.routes)
            : endpointTable(eds);
    return kinds.length > 1 ? `${k.toUpperCase()}\n${table}` : table;
  });
  return sections.join('\n');
}

/** Envoy's admin config dump, or `{ configs: [{ type, resources }] }`, as resources by kind. */
export function fromDump(dump: unknown): ProxyResources {
  const configs = ((dump as { configs?: unknown } | null)?.configs ?? []) as Resource[];
  const out = {
    clusters: [] as Resource[],
    listeners: [] as Resource[],
    routes: [] as Resource[],
    endpoints: [] as Resource[],
  };
  for (const c of configs) {
    const type = String(c['@type'] ?? c.type ?? '');
    if (Array.isArray(c.resources)) {
      const kind = ({ CDS: 'clusters', LDS: 'listeners', RDS: 'routes', EDS: 'endpoints' } as const)[type];
      if (kind) out[kind].push(...(c.resources as Resource[]));
    } else if (type.endsWith('ClustersConfigDump')) {
      out.clusters.push(...list(c.dynamic_active_clusters).map((e) => e.cluster as Resource));
    } else if (type.endsWith('ListenersConfigDump')) {
      out.listeners.push(
        ...list(c.dynamic_listeners).map(
          (e) => (e.active_state as Resource | undefined)?.listener as Resource,
        ),
      );
    } else if (type.endsWith('RoutesConfigDump')) {
      out.routes.push(...list(c.dynamic_route_configs).map((e) => e.route_config as Resource));
    } else if (type.endsWith('EndpointsConfigDump')) {
      out.endpoints.push(...list(c.dynamic_endpoint_configs).map((e) => e.endpoint_config as Resource));
    }
  }
  const present = (l: Resource[]): Resource[] => l.filter((r) => r && typeof r === 'object');
  return {
    clusters: present(out.clusters),
    listeners: present(out.listeners),
    routes: present(out.routes),
    endpoints: present(out.endpoints),
  };
}

export function clusterTable(clusters: readonly Resource[]): string {
  return formatTable(
    ['NAME', 'SERVICE', 'PORT', 'SUBSET', 'DIRECTION', 'TYPE', 'LB'],
    clusters.map((c) => {
      const name = str(c.name);
      const key = parseClusterName(name);
      return [
        name,
        key?.hostname ?? '-',
        key ? String(key.port) : '-',
        key?.subset || '-',
        key?.direction ?? '-',
        str(c.type) || (c.cluster_type ? 'CUSTOM' : 'STATIC'),
        str(c.lb_policy) || 'ROUND_ROBIN',
      ];
    }),
  );
}

export function listenerTable(listeners: readonly Resource[]): string {
  return formatTable(
    ['NAME', 'ADDRESS', 'PORT', 'DESTINATION'],
    listeners.map((l) => {
      const socket = obj(obj(l.address).socket_address);
      const api = obj(obj(l.api_listener).api_listener);
      const destinations = Object.keys(api).length
        ? [hcmDestination(api)]
        : list(l.filter_chains).flatMap((fc) =>
            list(fc.filters).map((f) => filterDestination(obj(f.typed_config))),
          );
      return [
        str(l.name),
        Object.keys(api).length ? '(api listener)' : str(socket.address) || '-',
        socket.port_value === undefined ? '-' : String(socket.port_value),
        [...new Set(destinations.filter(Boolean))].join(', ') || '-',
      ];
    }),
  );
}

export function routeTable(routes: readonly Resource[]): string {
  const rows: string[][] = [];
  for (const rc of routes) {
    for (const vh of list(rc.virtual_hosts)) {
      for (const r of list(vh.routes)) {
        rows.push([
          str(rc.name),
          str(vh.name),
          list<string>(vh.domains).join(',') || '-',
          match(obj(r.match)),
          action(r),
        ]);
      }
    }
  }
  return formatTable(['NAME', 'VIRTUAL HOST', 'DOMAINS', 'MATCH', 'DESTINATION'], rows);
}

export function endpointTable(eds: EdszView | undefined): string {
  const rows: string[][] = [];
  for (const c of eds?.clusters ?? []) {
    for (const l of c.localities) {
      const locality =
        [l.locality.region, l.locality.zone, l.locality.subZone].filter(Boolean).join('/') || '-';
      for (const e of l.endpoints) {
        rows.push([
          `${e.address}:${e.port}`,
          e.health,
          String(e.weight),
          locality,
          String(l.priority),
          c.clusterName,
        ]);
      }
    }
  }
  return formatTable(['ENDPOINT', 'HEALTH', 'WEIGHT', 'LOCALITY', 'PRIORITY', 'CLUSTER'], rows);
}

function hcmDestination(hcm: Resource): string {
  const rds = obj(hcm.rds);
  if (rds.route_config_name) return `Route: ${str(rds.route_config_name)}`;
  if (hcm.route_config) return `Route: ${str(obj(hcm.route_config).name) || '(inline)'}`;
  return '';
}

function filterDestination(config: Resource): string {
  const type = str(config['@type']);
  if (type.endsWith('HttpConnectionManager')) return hcmDestination(config);
  if (type.endsWith('TcpProxy')) {
    if (config.cluster) return `Cluster: ${str(config.cluster)}`;
    const weighted = list(obj(config.weighted_clusters).clusters);
    return weighted.map((w) => `Cluster: ${str(w.name)} ${str(w.weight)}`).join(', ');
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
  return '-';
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
