// CDS for proxyless gRPC (gRFCs A27, A37): `outbound|PORT|SUBSET|HOST` as an EDS cluster over ADS, or
// a LOGICAL_DNS cluster for DNS-resolved services. NONE-resolution services have no gRPC form. A
// subset cluster (named by a route, xds/traffic/http-routes.ts) is served only when a
// DestinationRule visible to the client's namespace defines the subset. A DestinationRule's policy
// is rendered as far as gRPC honours it: ROUND_ROBIN, or RING_HASH for consistentHash (A42), and
// http2MaxRequests as the circuit breaker's max_requests (A32). The rest is accepted and listed as
// a gRPC limitation (xds/traffic/cluster-limitations.ts). Which lb_policy a client may be sent is
// its client profile's (xds/proxy/client-capabilities.ts): gRPC C-core 1.50–1.51 crash on RING_HASH
// and get ROUND_ROBIN. Sidecar scoping does not apply: a gRPC client is sent only the names it asks
// for (docs/traffic.md). BlackHoleCluster, which routes name for a destination without a cluster,
// is an EDS cluster without endpoints; so is a DNS service's subset that matches no endpoint.
import type { Cluster } from '../../generated/envoy/config/cluster/v3/Cluster.js';
import type { GenerateContext, ResourceGenerator } from '../generator.js';
import { BLACKHOLE_CLUSTER, clusterHost, clusterName, parseClusterName } from '../names.js';
import { encodeResource } from '../../proto/resource.js';
import { CLUSTER } from '../../proto/type-urls.js';
import { findPort, type Service, type ServicePort } from '../../../model/service.js';
import { findSubset, subsetEndpoints } from '../../traffic/subsets.js';
import { clusterPolicy, type ClusterPolicy } from '../../traffic/traffic-policy.js';
import { clientProfile, type ClientProfile, type LbPolicy } from '../../proxy/client-capabilities.js';
import type { LoadBalancerSettings } from '../../../mesh/types.js';

/** gRPC's default ring size (A42) when `minimumRingSize` is not set, the same as Envoy's. */
const DEFAULT_MIN_RING_SIZE = 1024;
import { withGrpcClientTls } from './cluster-security.js';

export const grpcClusterGenerator: ResourceGenerator = {
  typeUrl: CLUSTER,
  proxyKind: 'grpc',
  hostOf: clusterHost,
  // DestinationRules (policies and subsets) are seen by namespace; clients with a known defect get
  // their own rendering (client-capabilities.ts).
  viewKey: (proxy) => {
    const { key } = clientProfile(proxy);
    return key ? `${proxy.namespace}\0${key}` : proxy.namespace;
  },
  wildcardNames: (ctx) =>
    ctx.catalog
      .services()
      .filter((s) => s.resolution !== 'NONE')
      .flatMap((s) => {
        const rule = ctx.index.destinationRules.lookup(s.hostname, ctx.proxy.namespace, s.namespace);
        const subsets = rule?.spec.subsets ?? [];
        return s.ports.flatMap((p) => [
          clusterName('outbound', p.number, '', s.hostname),
          ...subsets.map((sub) => clusterName('outbound', p.number, sub.name, s.hostname)),
        ]);
      }),
  build(ctx, name) {
    if (name === BLACKHOLE_CLUSTER) return encodeResource(CLUSTER, name, blackHoleCluster());
    const key = parseClusterName(name);
    if (!key || key.direction !== 'outbound') return undefined;
    const service = ctx.catalog.service(key.hostname);
    const port = service && findPort(service, key.port);
    if (!service || !port || service.resolution === 'NONE') return undefined;
    const source = clusterPolicy(
      ctx.index,
      service.hostname,
      port.number,
      key.subset,
      ctx.proxy.namespace,
      service.namespace,
    );
    if (key.subset !== '' && !source) return undefined;
    const cluster = baseCluster(ctx, service, port, key.subset, name);
    const secured =
      cluster &&
      withGrpcClientTls(
        ctx,
        service,
        port.number,
        source ? applyPolicy(cluster, source.policy, clientProfile(ctx.proxy)) : cluster,
        key.subset,
      );
    return secured && encodeResource(CLUSTER, name, secured);
  },
};

/**
 * Where a route sends what has no cluster (xds/traffic/sent-clusters.ts): an EDS cluster whose load
 * assignment has no endpoints, so the call fails UNAVAILABLE at once, as Envoy answers 503.
 */
function blackHoleCluster(name = BLACKHOLE_CLUSTER): Cluster {
  return {
    name,
    type: 'EDS',
    eds_cluster_config: {
      service_name: BLACKHOLE_CLUSTER,
      eds_config: { ads: {}, resource_api_version: 'V3' },
    },
    lb_policy: 'ROUND_ROBIN',
  };
}

function baseCluster(
  ctx: GenerateContext,
  service: Service,
  port: ServicePort,
  subset: string,
  name: string,
): Cluster | undefined {
  if (service.resolution !== 'DNS')
    return {
      name,
      type: 'EDS',
      eds_cluster_config: { service_name: name, eds_config: { ads: {}, resource_api_version: 'V3' } },
      lb_policy: 'ROUND_ROBIN',
    };
  let endpoints = ctx.catalog.endpoints(service.hostname, port.number);
  if (subset !== '') {
    const sub = findSubset(ctx.index, ctx.catalog, service.hostname, subset, ctx.proxy.namespace);
    endpoints = sub ? subsetEndpoints(endpoints, sub) : [];
    // gRPC's LOGICAL_DNS takes exactly one address: a subset matching none reads BlackHoleCluster's
    // empty assignment instead, so the route naming it is still served a cluster.
    if (endpoints.length === 0) return blackHoleCluster(name);
  }
  const first = endpoints[0];
  return {
    name,
    type: 'LOGICAL_DNS',
    lb_policy: 'ROUND_ROBIN',
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: {
                address: {
                  socket_address: {
                    address: first?.endpoint.address ?? service.hostname,
                    port_value: first?.port ?? port.number,
                  },
                },
              },
            },
          ],
        },
      ],
    },
  };
}

function applyPolicy(cluster: Cluster, policy: ClusterPolicy, client: ClientProfile): Cluster {
  const out: Cluster = { ...cluster };
  const hash = policy.loadBalancer?.consistentHash;
  if (client.lbPolicy(wantedPolicy(policy.loadBalancer)) === 'RING_HASH') {
    out.lb_policy = 'RING_HASH';
    out.ring_hash_lb_config = {
      minimum_ring_size: { value: hash?.minimumRingSize || DEFAULT_MIN_RING_SIZE },
    };
  }
  const maxRequests = policy.connectionPool?.http?.http2MaxRequests;
  if (maxRequests !== undefined)
    out.circuit_breakers = { thresholds: [{ priority: 'DEFAULT', max_requests: { value: maxRequests } }] };
  return out;
}

/** The lb_policy a DestinationRule's loadBalancer asks for (before the client's profile has its say). */
function wantedPolicy(lb: LoadBalancerSettings | undefined): LbPolicy {
  if (lb?.consistentHash) return 'RING_HASH';
  switch (lb?.simple) {
    case 'LEAST_CONN':
    case 'LEAST_REQUEST':
      return 'LEAST_REQUEST';
    case 'RANDOM':
      return 'RANDOM';
    case 'PASSTHROUGH':
      return 'CLUSTER_PROVIDED';
    default:
      return 'ROUND_ROBIN';
  }
}
