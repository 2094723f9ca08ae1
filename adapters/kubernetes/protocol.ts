// A Kubernetes Service port's application protocol, by Istio's rules (pkg/config/kube ConvertProtocol):
// `protocol: UDP` wins; else `appProtocol` if set, else the port name; `grpc-web` is matched as a
// prefix first (it contains a hyphen); otherwise the text before the first `-` (or the whole name)
// is looked up case-insensitively. Where Istio would fall back to protocol sniffing, Portolan has
// nothing to sniff with and uses TCP.
import type { Protocol } from '../../model/service.js';

/** Istio's protocol names, lower-cased, mapped onto Portolan's smaller Protocol set. */
const BY_NAME: ReadonlyMap<string, Protocol> = new Map<string, Protocol>([
  ['tcp', 'TCP'],
  ['udp', 'UDP'],
  ['grpc', 'GRPC'],
  // Istio's GRPC-Web is HTTP carried over HTTP/2 upstream; Portolan has no separate kind for it.
  ['grpc-web', 'HTTP2'],
  ['http', 'HTTP'],
  // HTTP_PROXY only matters for sidecar egress listeners; as a destination it is plain HTTP.
  ['http_proxy', 'HTTP'],
  ['http2', 'HTTP2'],
  ['https', 'HTTPS'],
  ['tls', 'TLS'],
  ['mongo', 'MONGO'],
  ['redis', 'REDIS'],
  ['mysql', 'MYSQL'],
]);

/** The standard `kubernetes.io/*` appProtocol values (Service API), as Istio maps them. */
const KUBERNETES_APP_PROTOCOLS: ReadonlyMap<string, Protocol> = new Map<string, Protocol>([
  ['kubernetes.io/h2c', 'HTTP2'],
  ['kubernetes.io/ws', 'HTTP'],
  ['kubernetes.io/wss', 'HTTPS'],
]);

export interface KubePortProtocolInput {
  readonly name: string;
  /** The Service port's L4 `protocol` (TCP, UDP, SCTP); TCP when absent. */
  readonly protocol?: string;
  readonly appProtocol?: string;
}

export function portProtocol(port: KubePortProtocolInput): Protocol {
  if (port.protocol?.toUpperCase() === 'UDP') return 'UDP';
  if (port.appProtocol !== undefined) {
    const standard = KUBERNETES_APP_PROTOCOLS.get(port.appProtocol);
    if (standard) return standard;
  }
  const name = (port.appProtocol ?? port.name).toLowerCase();
  if (name.startsWith('grpc-web')) return 'HTTP2';
  const dash = name.indexOf('-');
  const prefix = dash >= 0 ? name.slice(0, dash) : name;
  return BY_NAME.get(prefix) ?? 'TCP';
}
