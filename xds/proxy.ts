// Who is on the other end of a stream, read from the node of its first request.
import type { Locality } from '../model/endpoint.js';

/** Which generators serve a proxy: proxyless gRPC clients want api_listeners, Envoy wants socket listeners. */
export type ProxyKind = 'grpc' | 'envoy';

export interface Proxy {
  readonly id: string;
  readonly cluster: string;
  readonly kind: ProxyKind;
  readonly userAgent: string;
  readonly namespace: string;
  /** IPs the workload is reachable on (from the id's IP field and metadata INSTANCE_IPS). */
  readonly ips: readonly string[];
  readonly locality: Locality;
  readonly metadata: Readonly<Record<string, unknown>>;
}

/** The node as decoded from a DiscoveryRequest (snake_case, metadata already turned into plain JSON). */
export interface NodeInfo {
  readonly id?: string;
  readonly cluster?: string;
  readonly user_agent_name?: string;
  readonly metadata?: Record<string, unknown>;
  readonly locality?: { region?: string; zone?: string; sub_zone?: string };
}

export class NodeError extends Error {}

export function proxyFromNode(node: NodeInfo): Proxy {
  const id = node.id ?? '';
  if (!id) throw new NodeError('node.id is required');
  const metadata = node.metadata ?? {};
  const userAgent = node.user_agent_name ?? '';
  const ips = new Set<string>();
  // Istio's form TYPE~IP~ID~DOMAIN carries the workload IP.
  const parts = id.split('~');
  if (parts.length === 4 && parts[1]) ips.add(parts[1]);
  const instanceIps = metadata.INSTANCE_IPS;
  if (typeof instanceIps === 'string') {
    for (const ip of instanceIps.split(',')) if (ip.trim()) ips.add(ip.trim());
  }
  const namespace =
    typeof metadata.NAMESPACE === 'string' && metadata.NAMESPACE ? metadata.NAMESPACE : 'default';
  return {
    id,
    cluster: node.cluster ?? '',
    kind: detectKind(userAgent, metadata, parts),
    userAgent,
    namespace,
    ips: [...ips],
    locality: {
      region: node.locality?.region ?? '',
      zone: node.locality?.zone ?? '',
      subzone: node.locality?.sub_zone ?? '',
    },
    metadata,
  };
}

// Istio marks proxyless clients with GENERATOR=grpc; gRPC libraries also name themselves in
// user_agent_name ("gRPC Node", "grpc-java", "gRPC C-core", "grpc-go").
function detectKind(
  userAgent: string,
  metadata: Record<string, unknown>,
  idParts: readonly string[],
): ProxyKind {
  if (metadata.GENERATOR === 'grpc') return 'grpc';
  if (userAgent === 'envoy') return 'envoy';
  if (/grpc/i.test(userAgent)) return 'grpc';
  if (idParts.length === 4 && (idParts[0] === 'sidecar' || idParts[0] === 'router')) return 'envoy';
  return 'grpc';
}
