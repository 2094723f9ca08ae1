// A service as every registry reports it: the unit that clusters, routes and listeners are built from.

/** Application protocol of a service port; decides HTTP vs TCP handling downstream. */
export type Protocol =
  'HTTP' | 'HTTP2' | 'GRPC' | 'HTTPS' | 'TLS' | 'TCP' | 'MONGO' | 'REDIS' | 'MYSQL' | 'UDP';

export const PROTOCOLS: readonly Protocol[] = [
  'HTTP',
  'HTTP2',
  'GRPC',
  'HTTPS',
  'TLS',
  'TCP',
  'MONGO',
  'REDIS',
  'MYSQL',
  'UDP',
];

/** How clients find the instances: our endpoints (STATIC), DNS of the endpoint addresses, or not at all (NONE). */
export type Resolution = 'STATIC' | 'DNS' | 'NONE';

export interface ServicePort {
  /** Unique within the service; endpoints map their target ports by this name. */
  readonly name: string;
  readonly number: number;
  readonly protocol: Protocol;
}

export interface Service {
  /** Fully qualified name, e.g. `echo.example.internal`; the key across registries. */
  readonly hostname: string;
  readonly namespace: string;
  readonly ports: readonly ServicePort[];
  /** Virtual IPs or CIDRs clients use for the service (may be empty). */
  readonly addresses: readonly string[];
  readonly resolution: Resolution;
  readonly labels: Readonly<Record<string, string>>;
  /** Name of the registry that reported it (`config`, `mock`, `consul`, ...). */
  readonly registry: string;
  /** Whether the service is part of the mesh or outside it (Istio's ServiceEntry `location`). */
  readonly location: 'MESH_INTERNAL' | 'MESH_EXTERNAL';
}

export function isHttpProtocol(p: Protocol): boolean {
  return p === 'HTTP' || p === 'HTTP2' || p === 'GRPC';
}

export function findPort(service: Service, port: number): ServicePort | undefined {
  return service.ports.find((p) => p.number === port);
}
