// What of a DestinationRule's traffic policy (and a Sidecar) a kind of client is not given: the
// config is accepted and served as far as it can be, and this list, shown in /debug/configz, says
// what was left out and why. It mirrors the renderers: xds/generators/envoy/cluster-policy.ts and
// xds/generators/grpc/cluster.ts. `tls` is rendered (and reported) elsewhere.
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { PortTrafficPolicy, TrafficPolicy } from '../../mesh/types.js';
import { resourceKey } from '../../mesh/types.js';

export type ClientKind = 'envoy' | 'grpc';

export interface TrafficLimitation {
  /** `Kind/namespace/name`. */
  readonly resource: string;
  /** Field path in the resource, e.g. `spec.subsets[0].trafficPolicy.outlierDetection`. */
  readonly field: string;
  readonly clients: readonly ClientKind[];
  readonly reason: string;
  /** Set when only some versions of those clients are concerned: the rule's id in xds/proxy/client-capabilities.ts. */
  readonly rule?: string;
}

const GRPC_TCP_POOL = 'gRPC clients do not take TCP connection-pool settings from xDS';
const GRPC_HTTP_POOL = 'gRPC clients take only http2MaxRequests (circuit breaker max_requests, gRFC A32)';

export function clusterLimitations(config: MeshConfig): TrafficLimitation[] {
  const out: TrafficLimitation[] = [];
  for (const rule of config.destinationRules) {
    const resource = resourceKey(rule);
    const add = (field: string, clients: ClientKind[], reason: string): void => {
      out.push({ resource, field, clients, reason });
    };
    if (rule.spec.workloadSelector)
      add(
        'spec.workloadSelector',
        ['envoy', 'grpc'],
        'not honoured: the rule applies to every proxy of the namespaces it is exported to',
      );
    policyLimitations('spec.trafficPolicy', rule.spec.trafficPolicy, add);
    rule.spec.subsets?.forEach((s, i) =>
      policyLimitations(`spec.subsets[${i}].trafficPolicy`, s.trafficPolicy, add),
    );
  }
  for (const sidecar of config.sidecars) {
    const resource = resourceKey(sidecar);
    if (sidecar.spec.egress)
      out.push({
        resource,
        field: 'spec.egress',
        clients: ['grpc'],
        reason:
          'proxyless gRPC clients are sent only the names they ask for; Sidecar scoping applies to Envoy',
      });
    sidecar.spec.egress?.forEach((e, i) => {
      for (const field of ['bind', 'captureMode'] as const)
        if (e[field] !== undefined)
          out.push({
            resource,
            field: `spec.egress[${i}].${field}`,
            clients: ['envoy'],
            reason: 'outbound listeners follow the node’s outbound modes (docs/envoy.md), not the Sidecar',
          });
    });
  }
  return out;
}

type Add = (field: string, clients: ClientKind[], reason: string) => void;

function policyLimitations(path: string, policy: TrafficPolicy | undefined, add: Add): void {
  if (!policy) return;
  componentLimitations(path, policy, add);
  policy.portLevelSettings?.forEach((p, i) =>
    componentLimitations(`${path}.portLevelSettings[${i}]`, p, add),
  );
}

function componentLimitations(path: string, policy: Omit<PortTrafficPolicy, 'port'>, add: Add): void {
  const lb = policy.loadBalancer;
  const simple = lb?.simple;
  if (simple === 'LEAST_CONN' || simple === 'LEAST_REQUEST' || simple === 'RANDOM')
    add(
      `${path}.loadBalancer.simple`,
      ['grpc'],
      `@grpc/grpc-js-xds has no ${simple} policy; gRPC clients balance ROUND_ROBIN`,
    );
  if (simple === 'PASSTHROUGH')
    add(
      `${path}.loadBalancer.simple`,
      ['grpc'],
      'gRPC has no original-destination balancing; gRPC clients balance ROUND_ROBIN over the endpoints',
    );
  const hash = lb?.consistentHash;
  if (hash?.httpCookie)
    add(
      `${path}.loadBalancer.consistentHash.httpCookie`,
      ['grpc'],
      'gRPC hashes on headers only (gRFC A42), not cookies',
    );
  if (hash?.httpQueryParameterName)
    add(
      `${path}.loadBalancer.consistentHash.httpQueryParameterName`,
      ['grpc'],
      'gRPC hashes on headers only (gRFC A42), not query parameters',
    );
  if (lb?.localityLbSetting)
    add(
      `${path}.loadBalancer.localityLbSetting`,
      ['envoy', 'grpc'],
      'locality failover and distribution are not rendered',
    );
  if (lb?.warmupDurationSecs)
    add(`${path}.loadBalancer.warmupDurationSecs`, ['envoy', 'grpc'], 'slow-start warm-up is not rendered');

  const tcp = policy.connectionPool?.tcp;
  for (const field of ['maxConnections', 'connectTimeout', 'tcpKeepalive', 'maxConnectionDuration'] as const)
    if (tcp?.[field] !== undefined) add(`${path}.connectionPool.tcp.${field}`, ['grpc'], GRPC_TCP_POOL);
  if (tcp?.idleTimeout !== undefined)
    add(
      `${path}.connectionPool.tcp.idleTimeout`,
      ['envoy', 'grpc'],
      'a TCP idle timeout belongs on the listener’s TCP proxy, which does not read DestinationRules here',
    );
  const http = policy.connectionPool?.http;
  for (const field of [
    'http1MaxPendingRequests',
    'maxRequestsPerConnection',
    'maxRetries',
    'idleTimeout',
    'h2UpgradePolicy',
    'useClientProtocol',
    'maxConcurrentStreams',
  ] as const)
    if (http?.[field] !== undefined) add(`${path}.connectionPool.http.${field}`, ['grpc'], GRPC_HTTP_POOL);

  if (policy.outlierDetection)
    add(
      `${path}.outlierDetection`,
      ['grpc'],
      'gRPC outlier detection (gRFC A50) ejects by success rate or failure percentage only; consecutive-error ejection is not rendered for gRPC',
    );
}
