// The building blocks every Envoy listener is made of: HttpConnectionManager (RDS over ADS or an
// inline route), tcp_proxy, the router filter, socket addresses. Typed against Envoy's generated types.
import type { Address } from '../../generated/envoy/config/core/v3/Address.js';
import type { Filter } from '../../generated/envoy/config/listener/v3/Filter.js';
import type { ListenerFilter } from '../../generated/envoy/config/listener/v3/ListenerFilter.js';
import type { RouteConfiguration } from '../../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { HttpConnectionManager } from '../../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import type { HttpFilter } from '../../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpFilter.js';
import type { TcpProxy } from '../../generated/envoy/extensions/filters/network/tcp_proxy/v3/TcpProxy.js';
import {
  DEFAULT_PATH_NORMALIZATION,
  type MeshConfig,
  type PathNormalization,
} from '../../../mesh/mesh-config.js';
import { toAny } from '../../proto/resource.js';
import { faultHttpFilter } from '../../traffic/fault.js';
import type { TcpTarget } from '../../traffic/tcp-routes.js';

export const HCM_TYPE =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
export const ROUTER_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router';
export const TCP_PROXY_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy';
export const ORIGINAL_DST_TYPE =
  'type.googleapis.com/envoy.extensions.filters.listener.original_dst.v3.OriginalDst';
export const TLS_INSPECTOR_TYPE =
  'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector';
export const DOWNSTREAM_TLS_TYPE =
  'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext';
export const UPSTREAM_TLS_TYPE =
  'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext';
export const HTTP_PROTOCOL_OPTIONS_TYPE =
  'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions';

export const ADS_CONFIG_SOURCE = { ads: {}, resource_api_version: 'V3' } as const;

export function socketAddress(address: string, port: number): Address {
  return { socket_address: { address, port_value: port } };
}

type RouteSource = { rds: string } | { inline: RouteConfiguration };

export interface HcmOptions {
  /** Forward-proxy listeners accept `GET http://host/path` (absolute URLs). */
  readonly absoluteUrls?: boolean;
  /** Outbound and gateway HCMs carry the fault filter (inert until a route configures it), as Istio's do. */
  readonly fault?: boolean;
  /** Filters that go first: authentication and authorization of inbound and gateway traffic. */
  readonly filters?: readonly HttpFilter[];
  /** How paths are normalized before routing and the filters see them; absent: the default level. */
  readonly paths?: PathNormalization;
}

/** The HCM options that follow from the mesh-wide settings of `config`. */
export function meshHcmOptions(config: MeshConfig): Pick<HcmOptions, 'paths'> {
  return config.pathNormalization ? { paths: config.pathNormalization } : {};
}

/**
 * The HCM fields of a normalization level, as Istio sets them on every HCM. Envoy's defaults are
 * none of these (and a path matcher in RBAC sees the path as received): `/./admin`, `/%61dmin` and
 * `/public/../admin` would bypass a path rule (CVE-2019-9901, CVE-2021-31920).
 */
export function pathNormalizationFields(
  level: PathNormalization,
): Pick<HttpConnectionManager, 'normalize_path' | 'merge_slashes' | 'path_with_escaped_slashes_action'> {
  switch (level) {
    case 'NONE':
      return { normalize_path: { value: false }, path_with_escaped_slashes_action: 'KEEP_UNCHANGED' };
    case 'BASE':
      return { normalize_path: { value: true }, path_with_escaped_slashes_action: 'KEEP_UNCHANGED' };
    case 'MERGE_SLASHES':
      return {
        normalize_path: { value: true },
        merge_slashes: true,
        path_with_escaped_slashes_action: 'KEEP_UNCHANGED',
      };
    case 'DECODE_AND_MERGE_SLASHES':
      return {
        normalize_path: { value: true },
        merge_slashes: true,
        path_with_escaped_slashes_action: 'UNESCAPE_AND_FORWARD',
      };
  }
}

export function httpConnectionManager(
  statPrefix: string,
  routes: RouteSource,
  opts: HcmOptions = {},
): Filter {
  const hcm: HttpConnectionManager = {
    stat_prefix: statPrefix,
    codec_type: 'AUTO',
    ...('rds' in routes
      ? { rds: { route_config_name: routes.rds, config_source: ADS_CONFIG_SOURCE } }
      : { route_config: routes.inline }),
    http_filters: [
      ...(opts.filters ?? []),
      ...(opts.fault ? [faultHttpFilter()] : []),
      { name: 'envoy.filters.http.router', typed_config: toAny(ROUTER_TYPE, {}) },
    ],
    ...(opts.absoluteUrls && { http_protocol_options: { allow_absolute_url: { value: true } } }),
    ...pathNormalizationFields(opts.paths ?? DEFAULT_PATH_NORMALIZATION),
  };
  return { name: 'envoy.filters.network.http_connection_manager', typed_config: toAny(HCM_TYPE, hcm) };
}

/** tcp_proxy to one cluster, or to a VirtualService's weighted split. */
export function tcpProxy(statPrefix: string, target: string | TcpTarget): Filter {
  const proxy: TcpProxy = {
    stat_prefix: statPrefix,
    ...(typeof target === 'string' ? { cluster: target } : target),
  };
  return { name: 'envoy.filters.network.tcp_proxy', typed_config: toAny(TCP_PROXY_TYPE, proxy) };
}

export function originalDstFilter(): ListenerFilter {
  return { name: 'envoy.filters.listener.original_dst', typed_config: toAny(ORIGINAL_DST_TYPE, {}) };
}

export function tlsInspectorFilter(): ListenerFilter {
  return { name: 'envoy.filters.listener.tls_inspector', typed_config: toAny(TLS_INSPECTOR_TYPE, {}) };
}

/** A route configuration that sends everything to one cluster (inbound chains, explicit upstreams). */
export function singleClusterRoute(name: string, cluster: string): RouteConfiguration {
  return {
    name,
    virtual_hosts: [{ name, domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster } }] }],
  };
}
