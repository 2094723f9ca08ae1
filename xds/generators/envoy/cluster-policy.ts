// A DestinationRule's traffic policy on an Envoy cluster, as Istio renders it: load balancer,
// connection pool (circuit breaker thresholds over the wide-open defaults, connect timeout, TCP
// keepalive, HTTP protocol options), outlier detection (consecutive errors only: Istio turns
// success-rate ejection off) and, for locality load balancing, locality-weighted balancing (the
// priorities and weights themselves are in the proxy's EDS, xds/traffic/locality-lb.ts). Fields
// with no cluster-side form are listed in cluster-limitations.ts.
import type { Cluster } from '../../generated/envoy/config/cluster/v3/Cluster.js';
import type { CircuitBreakers } from '../../generated/envoy/config/cluster/v3/CircuitBreakers.js';
import type { OutlierDetection as EnvoyOutlierDetection } from '../../generated/envoy/config/cluster/v3/OutlierDetection.js';
import type { HttpProtocolOptions } from '../../generated/envoy/extensions/upstreams/http/v3/HttpProtocolOptions.js';
import type { ConnectionPoolSettings, LoadBalancerSettings, OutlierDetection } from '../../../mesh/types.js';
import { durationMs } from '../../../model/duration.js';
import { isHttpProtocol, type ServicePort } from '../../../model/service.js';
import { toAny } from '../../proto/resource.js';
import type { ClusterPolicy } from '../../traffic/traffic-policy.js';
import { wantsLocalityWeights } from '../../traffic/locality-lb.js';
import { HTTP_PROTOCOL_OPTIONS_TYPE } from './filters.js';

/** Envoy's (and Istio's) default ring size when `minimumRingSize` is not set. */
export const DEFAULT_MIN_RING_SIZE = 1024;
const HTTP_OPTIONS_KEY = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';

/** A protobuf Duration from a config duration string (validated upstream, so it parses). */
export function protoDuration(text: string): { seconds: number; nanos: number } {
  const ms = durationMs(text) ?? 0;
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/** `cluster` with the policy applied. ORIGINAL_DST clusters (resolution NONE) keep their CLUSTER_PROVIDED balancing. */
export function applyClusterPolicy(cluster: Cluster, policy: ClusterPolicy, port: ServicePort): Cluster {
  let out: Cluster = { ...cluster };
  if (policy.loadBalancer && out.type !== 'ORIGINAL_DST') out = applyLoadBalancer(out, policy.loadBalancer);
  if (policy.connectionPool) out = applyConnectionPool(out, policy.connectionPool, port);
  if (policy.outlierDetection) out = applyOutlierDetection(out, policy.outlierDetection);
  // Envoy ignores locality weights unless told to use them; only EDS clusters carry them (a DNS
  // cluster's single unweighted locality would get no traffic).
  if (out.type === 'EDS' && wantsLocalityWeights(policy))
    out = { ...out, common_lb_config: { ...out.common_lb_config, locality_weighted_lb_config: {} } };
  return out;
}

function applyLoadBalancer(cluster: Cluster, lb: LoadBalancerSettings): Cluster {
  if (lb.consistentHash) {
    const min = lb.consistentHash.minimumRingSize || DEFAULT_MIN_RING_SIZE;
    return { ...cluster, lb_policy: 'RING_HASH', ring_hash_lb_config: { minimum_ring_size: { value: min } } };
  }
  switch (lb.simple) {
    case 'ROUND_ROBIN':
      return { ...cluster, lb_policy: 'ROUND_ROBIN' };
    case 'LEAST_CONN':
    case 'LEAST_REQUEST':
      return { ...cluster, lb_policy: 'LEAST_REQUEST' };
    case 'RANDOM':
      return { ...cluster, lb_policy: 'RANDOM' };
    case 'PASSTHROUGH': {
      // Straight to the address the caller dialled: no endpoints of ours involved.
      const { eds_cluster_config: _eds, load_assignment: _la, dns_lookup_family: _dns, ...rest } = cluster;
      return { ...rest, type: 'ORIGINAL_DST', lb_policy: 'CLUSTER_PROVIDED' };
    }
    default:
      return cluster;
  }
}

function applyConnectionPool(cluster: Cluster, pool: ConnectionPoolSettings, port: ServicePort): Cluster {
  const out: Cluster = { ...cluster, circuit_breakers: thresholds(cluster.circuit_breakers, pool) };
  const tcp = pool.tcp;
  if (tcp?.connectTimeout) out.connect_timeout = protoDuration(tcp.connectTimeout);
  if (tcp?.tcpKeepalive) {
    const k = tcp.tcpKeepalive;
    out.upstream_connection_options = {
      tcp_keepalive: {
        ...(k.probes !== undefined && { keepalive_probes: { value: k.probes } }),
        ...(k.time && { keepalive_time: { value: wholeSeconds(k.time) } }),
        ...(k.interval && { keepalive_interval: { value: wholeSeconds(k.interval) } }),
      },
    };
  }
  if (isHttpProtocol(port.protocol)) {
    const options = httpOptions(pool, port);
    if (options)
      out.typed_extension_protocol_options = {
        ...out.typed_extension_protocol_options,
        [HTTP_OPTIONS_KEY]: toAny(HTTP_PROTOCOL_OPTIONS_TYPE, options),
      };
  }
  return out;
}

function wholeSeconds(text: string): number {
  return Math.max(1, Math.round((durationMs(text) ?? 0) / 1000));
}

// Istio's mapping: maxConnections, http1MaxPendingRequests, http2MaxRequests, maxRetries.
function thresholds(base: Cluster['circuit_breakers'], pool: ConnectionPoolSettings): CircuitBreakers {
  const [first = {}] = (base as CircuitBreakers | undefined)?.thresholds ?? [];
  const t = { ...first, priority: 'DEFAULT' as const };
  const set = (v: number | undefined) => (v === undefined ? undefined : { value: v });
  return {
    thresholds: [
      {
        ...t,
        ...(pool.tcp?.maxConnections !== undefined && { max_connections: set(pool.tcp.maxConnections) }),
        ...(pool.http?.http1MaxPendingRequests !== undefined && {
          max_pending_requests: set(pool.http.http1MaxPendingRequests),
        }),
        ...(pool.http?.http2MaxRequests !== undefined && { max_requests: set(pool.http.http2MaxRequests) }),
        ...(pool.http?.maxRetries !== undefined && { max_retries: set(pool.http.maxRetries) }),
      },
    ],
  };
}

/** The upstream HTTP options the pool asks for; undefined when it asks for none. */
function httpOptions(pool: ConnectionPoolSettings, port: ServicePort): HttpProtocolOptions | undefined {
  const http = pool.http;
  const common = {
    ...(http?.idleTimeout && { idle_timeout: protoDuration(http.idleTimeout) }),
    ...(http?.maxRequestsPerConnection && {
      max_requests_per_connection: { value: http.maxRequestsPerConnection },
    }),
    ...(pool.tcp?.maxConnectionDuration && {
      max_connection_duration: protoDuration(pool.tcp.maxConnectionDuration),
    }),
  };
  const h2Port = port.protocol === 'GRPC' || port.protocol === 'HTTP2';
  const upgrade = !h2Port && http?.h2UpgradePolicy === 'UPGRADE';
  const h2 = h2Port || upgrade;
  const http2 = http?.maxConcurrentStreams
    ? { max_concurrent_streams: { value: http.maxConcurrentStreams } }
    : {};
  const useClient = http?.useClientProtocol === true;
  if (Object.keys(common).length === 0 && !upgrade && !useClient && !(h2 && http?.maxConcurrentStreams))
    return undefined;
  return {
    ...(Object.keys(common).length > 0 && { common_http_protocol_options: common }),
    ...(useClient
      ? { use_downstream_protocol_config: { http_protocol_options: {}, http2_protocol_options: http2 } }
      : { explicit_http_config: h2 ? { http2_protocol_options: http2 } : { http_protocol_options: {} } }),
  };
}

function applyOutlierDetection(cluster: Cluster, o: OutlierDetection): Cluster {
  const od: EnvoyOutlierDetection = { enforcing_success_rate: { value: 0 } };
  // The deprecated consecutiveErrors counted gateway errors only (Istio's reading).
  if (o.consecutiveErrors) {
    od.consecutive_gateway_failure = { value: o.consecutiveErrors };
    od.enforcing_consecutive_gateway_failure = { value: 100 };
    od.enforcing_consecutive_5xx = { value: 0 };
  }
  if (o.consecutiveGatewayErrors !== undefined) {
    od.consecutive_gateway_failure = { value: o.consecutiveGatewayErrors };
    od.enforcing_consecutive_gateway_failure = { value: o.consecutiveGatewayErrors > 0 ? 100 : 0 };
  }
  if (o.consecutive5xxErrors !== undefined) {
    od.consecutive_5xx = { value: o.consecutive5xxErrors };
    od.enforcing_consecutive_5xx = { value: o.consecutive5xxErrors > 0 ? 100 : 0 };
  }
  if (o.consecutiveLocalOriginFailures !== undefined) {
    od.consecutive_local_origin_failure = { value: o.consecutiveLocalOriginFailures };
    od.enforcing_consecutive_local_origin_failure = { value: 100 };
  }
  if (o.splitExternalLocalOriginErrors !== undefined)
    od.split_external_local_origin_errors = o.splitExternalLocalOriginErrors;
  if (o.interval) od.interval = protoDuration(o.interval);
  if (o.baseEjectionTime) od.base_ejection_time = protoDuration(o.baseEjectionTime);
  if (o.maxEjectionPercent !== undefined) od.max_ejection_percent = { value: o.maxEjectionPercent };
  return {
    ...cluster,
    outlier_detection: od,
    // Istio: below minHealthPercent healthy hosts, balance over all of them (panic); 0 by default.
    common_lb_config: {
      ...cluster.common_lb_config,
      healthy_panic_threshold: { value: o.minHealthPercent ?? 0 },
    },
  };
}
