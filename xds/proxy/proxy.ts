// Who is on the other end of a stream, read from the node of its first request.
import { isIP } from 'node:net';
import type { Locality } from '../../model/endpoint.js';
import { parseEnvoyNode, type EnvoyNode } from './envoy-node.js';
import { NodeError } from './node-error.js';

export { NodeError } from './node-error.js';

/** Which generators serve a proxy: proxyless gRPC clients want api_listeners, Envoy wants socket listeners. */
export type ProxyKind = 'grpc' | 'envoy';

export interface Proxy {
  readonly id: string;
  readonly cluster: string;
  readonly kind: ProxyKind;
  readonly userAgent: string;
  /** The node's user_agent_version ('' when absent): with userAgent, what client-capabilities.ts keys on. */
  readonly userAgentVersion: string;
  readonly namespace: string;
  /** IPs the workload is reachable on (from the id's IP field and metadata INSTANCE_IPS). */
  readonly ips: readonly string[];
  readonly locality: Locality;
  readonly metadata: Readonly<Record<string, unknown>>;
  /** Envoy's settings (role, labels, outbound modes, upstreams); undefined for proxyless gRPC. */
  readonly envoy: EnvoyNode | undefined;
}

/** The node as decoded from a DiscoveryRequest (snake_case, metadata already turned into plain JSON). */
export interface NodeInfo {
  readonly id?: string;
  readonly cluster?: string;
  readonly user_agent_name?: string;
  readonly user_agent_version?: string;
  readonly metadata?: Record<string, unknown>;
  readonly locality?: { region?: string; zone?: string; sub_zone?: string };
}

export function proxyFromNode(node: NodeInfo): Proxy {
  const id = node.id ?? '';
  if (!id) throw new NodeError('node.id is required');
  const metadata = node.metadata ?? {};
  const userAgent = node.user_agent_name ?? '';
  const ips = new Set<string>();
  // Istio's form TYPE~IP~ID~DOMAIN carries the workload IP.
  const parts = id.split('~');
  if (parts.length > 1) checkIstioId(parts);
  if (parts.length === 4 && parts[1]) ips.add(parts[1]);
  const instanceIps = metadata.INSTANCE_IPS;
  if (instanceIps !== undefined && typeof instanceIps !== 'string')
    throw new NodeError('INSTANCE_IPS must be a comma-separated string');
  for (const ip of (instanceIps ?? '').split(',')) {
    if (!ip.trim()) continue;
    if (!isIP(ip.trim())) throw new NodeError(`INSTANCE_IPS: "${ip.trim()}" is not an IP address`);
    ips.add(ip.trim());
  }
  const kind = detectKind(userAgent, metadata, parts);
  const namespace =
    typeof metadata.NAMESPACE === 'string' && metadata.NAMESPACE ? metadata.NAMESPACE : 'default';
  return {
    id,
    cluster: node.cluster ?? '',
    kind,
    userAgent,
    userAgentVersion: node.user_agent_version ?? '',
    namespace,
    ips: [...ips],
    locality: {
      region: node.locality?.region ?? '',
      zone: node.locality?.zone ?? '',
      subzone: node.locality?.sub_zone ?? '',
    },
    metadata,
    envoy: kind === 'envoy' ? parseEnvoyNode(parts.length === 4 ? parts[0] : undefined, metadata) : undefined,
  };
}

// Istio's TYPE~IP~ID~DOMAIN: a `~` promises that form, so a malformed one is refused, not guessed at.
function checkIstioId(parts: readonly string[]): void {
  const [type = '', ip = '', id = ''] = parts;
  if (parts.length !== 4) throw new NodeError(`node id "${parts.join('~')}" is not TYPE~IP~ID~DOMAIN`);
  if (type !== 'sidecar' && type !== 'router')
    throw new NodeError(`node id type "${type}" is not sidecar or router`);
  if (!isIP(ip)) throw new NodeError(`node id IP "${ip}" is not an IP address`);
  if (!id) throw new NodeError('node id has an empty ID field');
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
