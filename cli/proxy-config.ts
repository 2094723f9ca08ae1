// `portolan proxy-config clusters|listeners|routes|endpoints|all PROXY_ID`: what one proxy was sent,
// as tables (from the running server's /debug/proxy_configz: names, types, ports, destinations,
// endpoints with health), or the full resources with `-o json|yaml` (from /debug/config_dump, either
// shape: Envoy's admin dump, or the per-type list other clients get).
import { stringify } from 'yaml';
import type { ProxyConfigzView } from '../admin/proxy-configz.js';
import { getJson } from './admin-client.js';
import { formatTable } from './table.js';

import type { ConfigFormat, ConfigKind } from './proxy-config-kinds.js';
export { CONFIG_KINDS, type ConfigFormat, type ConfigKind } from './proxy-config-kinds.js';
type Section = Exclude<ConfigKind, 'all'>;

type Resource = Record<string, unknown>;

export async function proxyConfig(
  httpAddr: string,
  kind: ConfigKind,
  proxyId: string,
  format: ConfigFormat,
): Promise<string> {
  const id = encodeURIComponent(proxyId);
  const kinds: readonly Section[] =
    kind === 'all' ? ['clusters', 'listeners', 'routes', 'endpoints'] : [kind];
  if (format !== 'table') {
    const resources = fromDump(await getJson<unknown>(httpAddr, `/debug/config_dump?proxyID=${id}`));
    const body = Object.fromEntries(kinds.map((k) => [k, resources[k]]));
    return format === 'json' ? `${JSON.stringify(body, null, 2)}\n` : stringify(body);
  }
  const view = await getJson<ProxyConfigzView>(httpAddr, `/debug/proxy_configz?proxyID=${id}`);
  return kinds
    .map((k) => (kinds.length > 1 ? `${k.toUpperCase()}\n${tableOf(view, k)}` : tableOf(view, k)))
    .join('\n');
}

export function tableOf(view: ProxyConfigzView, kind: Section): string {
  const dash = (v: string | number | null): string => (v === null || v === '' ? '-' : String(v));
  switch (kind) {
    case 'clusters':
      return formatTable(
        ['NAME', 'SERVICE', 'PORT', 'SUBSET', 'DIRECTION', 'TYPE', 'LB'],
        view.clusters.map((c) => [
          c.name,
          dash(c.service),
          dash(c.port),
          dash(c.subset),
          dash(c.direction),
          c.type,
          c.lb,
        ]),
      );
    case 'listeners':
      return formatTable(
        ['NAME', 'ADDRESS', 'PORT', 'DESTINATION'],
        view.listeners.map((l) => [l.name, l.address ?? '(api listener)', dash(l.port), dash(l.destination)]),
      );
    case 'routes':
      return formatTable(
        ['NAME', 'VIRTUAL HOST', 'DOMAINS', 'MATCH', 'DESTINATION'],
        view.routes.map((r) => [
          r.name,
          r.virtualHost,
          r.domains.join(',') || '-',
          r.match,
          dash(r.destination),
        ]),
      );
    case 'endpoints':
      return formatTable(
        ['ENDPOINT', 'HEALTH', 'WEIGHT', 'LOCALITY', 'PRIORITY', 'CLUSTER'],
        view.endpoints.map((e) => [
          `${e.address}:${e.port}`,
          e.health,
          String(e.weight),
          dash(e.locality),
          String(e.priority),
          e.cluster,
        ]),
      );
  }
}

/** Envoy's admin config dump, or `{ configs: [{ type, resources }] }`, as full resources by kind. */
export function fromDump(dump: unknown): Record<Section, Resource[]> {
  const configs = ((dump as { configs?: unknown } | null)?.configs ?? []) as Resource[];
  const out: Record<Section, Resource[]> = { clusters: [], listeners: [], routes: [], endpoints: [] };
  const entries = (v: unknown): Resource[] => (Array.isArray(v) ? (v as Resource[]) : []);
  for (const c of configs) {
    const type = [c['@type'], c.type].find((v): v is string => typeof v === 'string') ?? '';
    if (Array.isArray(c.resources)) {
      const kind = ({ CDS: 'clusters', LDS: 'listeners', RDS: 'routes', EDS: 'endpoints' } as const)[type];
      if (kind) out[kind].push(...(c.resources as Resource[]));
    } else if (type.endsWith('ClustersConfigDump')) {
      out.clusters.push(...entries(c.dynamic_active_clusters).map((e) => e.cluster as Resource));
    } else if (type.endsWith('ListenersConfigDump')) {
      out.listeners.push(
        ...entries(c.dynamic_listeners).map(
          (e) => (e.active_state as Resource | undefined)?.listener as Resource,
        ),
      );
    } else if (type.endsWith('RoutesConfigDump')) {
      out.routes.push(...entries(c.dynamic_route_configs).map((e) => e.route_config as Resource));
    } else if (type.endsWith('EndpointsConfigDump')) {
      out.endpoints.push(...entries(c.dynamic_endpoint_configs).map((e) => e.endpoint_config as Resource));
    }
  }
  for (const k of Object.keys(out) as Section[])
    out[k] = out[k].filter((r) => r !== null && typeof r === 'object');
  return out;
}
