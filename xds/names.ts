// Every xDS resource name format Portolan uses, in one place. Istio's formats, so tooling and
// habits carry over: clusters `outbound|PORT|SUBSET|HOST`, gRPC listeners `HOST:PORT`.

export type TrafficDirection = 'outbound' | 'inbound';

export interface ClusterKey {
  readonly direction: TrafficDirection;
  readonly port: number;
  readonly subset: string;
  readonly hostname: string;
}

export function clusterName(
  direction: TrafficDirection,
  port: number,
  subset: string,
  hostname: string,
): string {
  return `${direction}|${port}|${subset}|${hostname}`;
}

export function parseClusterName(name: string): ClusterKey | undefined {
  const parts = name.split('|');
  if (parts.length !== 4) return undefined;
  const [direction, portText = '', subset = '', hostname = ''] = parts;
  if (direction !== 'outbound' && direction !== 'inbound') return undefined;
  const port = parsePort(portText);
  if (port === undefined || !hostname) return undefined;
  return { direction, port, subset, hostname };
}

export interface HostPort {
  readonly hostname: string;
  /** Absent when the name carries no port (`xds:///HOST`). */
  readonly port?: number;
}

/** Name of the listener (and route configuration) a proxyless gRPC client asks for: `HOST:PORT`. */
export function grpcListenerName(hostname: string, port: number): string {
  return `${hostname}:${port}`;
}

/** Parses `HOST:PORT` or `HOST` (the authority in an `xds:///` target). */
export function parseHostPort(name: string): HostPort | undefined {
  const colon = name.lastIndexOf(':');
  if (colon < 0) return name ? { hostname: name } : undefined;
  const port = parsePort(name.slice(colon + 1));
  const hostname = name.slice(0, colon);
  if (port === undefined || !hostname) return undefined;
  return { hostname, port };
}

function parsePort(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}
