// Envoy clusters. Outbound `outbound|PORT|SUBSET|HOST` by resolution: EDS over ADS (STATIC), STRICT_DNS
// over the endpoint addresses (DNS; LOGICAL_DNS on the hostname when there are none), ORIGINAL_DST
// (NONE); a subset cluster for each subset of the DestinationRule the proxy sees, whose traffic
// policy (cluster-policy.ts) applies over the defaults. Inbound `inbound|PORT||` points at the local
// application. Defaults (docs/envoy.md): 10 s connect timeout and circuit breakers opened wide as
// Istio does, since Envoy's own 1024 bites busy VMs.
import type { Cluster } from '../../generated/envoy/config/cluster/v3/Cluster.js';
import type { CircuitBreakers } from '../../generated/envoy/config/cluster/v3/CircuitBreakers.js';
import type { HttpProtocolOptions } from '../../generated/envoy/extensions/upstreams/http/v3/HttpProtocolOptions.js';
import type { MeshIndex } from '../../../mesh/mesh-index.js';
import type { Catalog } from '../../../model/catalog.js';
import { findPort, type Service, type ServicePort } from '../../../model/service.js';
import { findSubset, subsetEndpoints } from '../../traffic/subsets.js';
import { clusterPolicy } from '../../traffic/traffic-policy.js';
import {
  BLACKHOLE_CLUSTER,
  clusterName,
  INBOUND_PASSTHROUGH_CLUSTER,
  inboundClusterName,
  PASSTHROUGH_CLUSTER,
} from '../names.js';
import { toAny } from '../../proto/resource.js';
import { applyClusterPolicy } from './cluster-policy.js';
import { ADS_CONFIG_SOURCE, HTTP_PROTOCOL_OPTIONS_TYPE, socketAddress } from './filters.js';

export const CONNECT_TIMEOUT = { seconds: 10 };
const UNLIMITED = { value: 4294967295 };

export const CIRCUIT_BREAKERS: CircuitBreakers = {
  thresholds: [
    {
      priority: 'DEFAULT',
      max_connections: UNLIMITED,
      max_pending_requests: UNLIMITED,
      max_requests: UNLIMITED,
      max_retries: UNLIMITED,
      track_remaining: true,
    },
  ],
};

/**
 * Every outbound cluster the proxy may be sent, for CDS wildcard subscriptions: each port of the
 * services in scope (the Sidecar's), and each subset of the DestinationRule the proxy's namespace
 * sees for it.
 */
export function outboundClusterNames(
  catalog: Catalog,
  index: MeshIndex,
  proxyNamespace: string,
  inScope: (service: Service) => boolean = () => true,
): string[] {
  return catalog.services().flatMap((s) => {
    if (!inScope(s)) return [];
    const subsets =
      index.destinationRules.lookup(s.hostname, proxyNamespace, s.namespace)?.spec.subsets ?? [];
    return s.ports.flatMap((p) => [
      clusterName('outbound', p.number, '', s.hostname),
      ...subsets.map((sub) => clusterName('outbound', p.number, sub.name, s.hostname)),
    ]);
  });
}

/** What an outbound cluster is built from besides the catalog. */
export interface OutboundClusterOptions {
  readonly index: MeshIndex;
  readonly proxyNamespace: string;
  /** '' for the service's own cluster. */
  readonly subset: string;
}

/** Undefined when the port does not exist, or the subset is not defined by the rule the proxy sees. */
export function outboundCluster(
  catalog: Catalog,
  service: Service,
  portNumber: number,
  options?: OutboundClusterOptions,
): Cluster | undefined {
  const port = findPort(service, portNumber);
  if (!port) return undefined;
  const subset = options?.subset ?? '';
  const source =
    options &&
    clusterPolicy(
      options.index,
      service.hostname,
      port.number,
      subset,
      options.proxyNamespace,
      service.namespace,
    );
  if (subset !== '' && !source) return undefined;
  const cluster = baseCluster(catalog, service, port, subset, options);
  return source ? applyClusterPolicy(cluster, source.policy, port) : cluster;
}

function baseCluster(
  catalog: Catalog,
  service: Service,
  port: ServicePort,
  subset: string,
  options: OutboundClusterOptions | undefined,
): Cluster {
  const name = clusterName('outbound', port.number, subset, service.hostname);
  const base: Cluster = {
    name,
    connect_timeout: CONNECT_TIMEOUT,
    circuit_breakers: CIRCUIT_BREAKERS,
    ...http2Options(port),
  };
  switch (service.resolution) {
    case 'STATIC':
      return {
        ...base,
        type: 'EDS',
        eds_cluster_config: { service_name: name, eds_config: ADS_CONFIG_SOURCE },
        lb_policy: 'ROUND_ROBIN',
      };
    case 'NONE':
      return { ...base, type: 'ORIGINAL_DST', lb_policy: 'CLUSTER_PROVIDED' };
    case 'DNS': {
      let endpoints = catalog.endpoints(service.hostname, port.number);
      const sub =
        options && subset !== ''
          ? findSubset(options.index, catalog, service.hostname, subset, options.proxyNamespace)
          : undefined;
      if (sub) endpoints = subsetEndpoints(endpoints, sub);
      // A subset names labelled endpoints; the bare hostname stands in only for the whole service.
      const targets =
        endpoints.length > 0 || sub
          ? endpoints.map((pe) => ({ address: pe.endpoint.address, port: pe.port }))
          : [{ address: service.hostname, port: port.number }];
      return {
        ...base,
        // LOGICAL_DNS takes exactly one address; several DNS names (or none) need STRICT_DNS.
        type: targets.length === 1 ? 'LOGICAL_DNS' : 'STRICT_DNS',
        dns_lookup_family: 'V4_ONLY',
        lb_policy: 'ROUND_ROBIN',
        load_assignment: {
          cluster_name: name,
          endpoints: [
            {
              lb_endpoints: targets.map((t) => ({ endpoint: { address: socketAddress(t.address, t.port) } })),
            },
          ],
        },
      };
    }
  }
}

/** The local application behind an inbound port, on loopback. */
export function inboundCluster(port: number, appPort: number): Cluster {
  const name = inboundClusterName(port);
  return {
    name,
    type: 'STATIC',
    connect_timeout: CONNECT_TIMEOUT,
    circuit_breakers: CIRCUIT_BREAKERS,
    lb_policy: 'ROUND_ROBIN',
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress('127.0.0.1', appPort) } }] }],
    },
  };
}

/** Traffic to destinations outside the registry, sent on to where it was going (ALLOW_ANY). */
export function passthroughCluster(): Cluster {
  return {
    name: PASSTHROUGH_CLUSTER,
    type: 'ORIGINAL_DST',
    lb_policy: 'CLUSTER_PROVIDED',
    connect_timeout: CONNECT_TIMEOUT,
    circuit_breakers: CIRCUIT_BREAKERS,
  };
}

/** Inbound traffic to ports no service declares; bound to 127.0.0.6 so iptables lets it through. */
export function inboundPassthroughCluster(): Cluster {
  return {
    ...passthroughCluster(),
    name: INBOUND_PASSTHROUGH_CLUSTER,
    upstream_bind_config: { source_address: { address: '127.0.0.6', port_value: 0 } },
  };
}

/** A cluster with no endpoints: traffic to it fails (REGISTRY_ONLY). */
export function blackHoleCluster(): Cluster {
  return { name: BLACKHOLE_CLUSTER, type: 'STATIC', connect_timeout: CONNECT_TIMEOUT };
}

// gRPC and HTTP/2 ports are spoken to in HTTP/2 upstream; Envoy defaults to HTTP/1.1.
function http2Options(port: ServicePort): Pick<Cluster, 'typed_extension_protocol_options'> {
  if (port.protocol !== 'GRPC' && port.protocol !== 'HTTP2') return {};
  const options: HttpProtocolOptions = { explicit_http_config: { http2_protocol_options: {} } };
  return {
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': toAny(HTTP_PROTOCOL_OPTIONS_TYPE, options),
    },
  };
}
