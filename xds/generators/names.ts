// Every xDS resource name format Portolan uses, in one place. Istio's formats, so tooling and
// habits carry over: clusters `outbound|PORT|SUBSET|HOST`, gRPC listeners `HOST:PORT`.
import type { ProxyKind } from '../proxy/proxy.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';

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

// Envoy sidecars and gateways (Istio's names).
export const VIRTUAL_OUTBOUND = 'virtualOutbound';
export const VIRTUAL_INBOUND = 'virtualInbound';
export const PASSTHROUGH_CLUSTER = 'PassthroughCluster';
export const BLACKHOLE_CLUSTER = 'BlackHoleCluster';
export const INBOUND_PASSTHROUGH_CLUSTER = 'InboundPassthroughClusterIpv4';
/** The route configuration of the HTTP proxy listener (Pilot's RDSHttpProxy). */
export const HTTP_PROXY_ROUTE = 'http_proxy';

/** `inbound|PORT||`: the local application behind a co-located endpoint port. */
export function inboundClusterName(port: number): string {
  return `inbound|${port}||`;
}

export function parseInboundClusterName(name: string): number | undefined {
  const m = /^inbound\|(\d{1,5})\|\|$/.exec(name);
  return m ? parsePort(m[1] ?? '') : undefined;
}

/** Socket listeners are named ADDRESS_PORT (`0.0.0.0_8080`, `127.0.0.1_9001`). */
export function socketListenerName(address: string, port: number): string {
  return `${address}_${port}`;
}

/** Outbound HTTP listeners use RDS named by port (`8080`); gateways by `http.PORT`. */
export function portRouteName(port: number): string {
  return String(port);
}

export function gatewayRouteName(port: number): string {
  return `http.${port}`;
}

/** The host an outbound cluster (or its load assignment) `outbound|PORT|SUBSET|HOST` belongs to. */
export function clusterHost(name: string): string | undefined {
  const key = parseClusterName(name);
  return key?.direction === 'outbound' ? key.hostname : undefined;
}

/** The host a proxyless listener or route `HOST[:PORT]` belongs to. */
export function hostPortHost(name: string): string | undefined {
  return parseHostPort(name)?.hostname;
}

/**
 * The host a resource name belongs to, when it belongs to one, as the generators' hostOf say it:
 * clusters and load assignments of every kind, proxyless listeners and routes. Envoy's listeners
 * and routes span many services: undefined. (For the subscription index, which keeps a stream's
 * names that do not exist yet by host.)
 */
export function nameHost(kind: ProxyKind, typeUrl: string, name: string): string | undefined {
  if (typeUrl === CLUSTER || typeUrl === ENDPOINT) return clusterHost(name);
  if (kind === 'grpc' && (typeUrl === LISTENER || typeUrl === ROUTE)) return hostPortHost(name);
  return undefined;
}
