// The xDS resource type URLs Portolan serves, and the order ADS pushes them in: clusters before
// their endpoints, listeners before their routes (Envoy's make-before-break rule).

export const TYPE_URL_PREFIX = 'type.googleapis.com/';
export const LISTENER = 'type.googleapis.com/envoy.config.listener.v3.Listener';
export const ROUTE = 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration';
export const CLUSTER = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
export const ENDPOINT = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';

/**
 * A workload's agent reporting its readiness probe (Istio's `istio.io/health`): a request of this
 * type with `error_detail` set means unhealthy, without it healthy. Never answered.
 */
export const HEALTH_INFO = 'istio.io/health';
/** The name table an agent's DNS proxy answers from (Istio's NDS). */
export const NAME_TABLE = 'type.googleapis.com/istio.networking.nds.v1.NameTable';
/** What an agent registered into a WorkloadGroup is told: the group's probe. */
export const WORKLOAD_REGISTRATION = 'type.googleapis.com/portolan.agent.v1.WorkloadRegistration';

export const PUSH_ORDER: readonly string[] = [CLUSTER, ENDPOINT, LISTENER, ROUTE];

/** LDS and CDS support wildcard subscriptions; RDS and EDS only answer named resources. */
export function supportsWildcard(typeUrl: string): boolean {
  return typeUrl === LISTENER || typeUrl === CLUSTER;
}

export function shortTypeName(typeUrl: string): string {
  switch (typeUrl) {
    case LISTENER:
      return 'LDS';
    case ROUTE:
      return 'RDS';
    case CLUSTER:
      return 'CDS';
    case ENDPOINT:
      return 'EDS';
    case NAME_TABLE:
      return 'NDS';
    default:
      return typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
  }
}
