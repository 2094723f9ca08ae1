// The listeners of one Envoy sidecar, by name. Inbound: one chain per co-located endpoint port, to
// `inbound|PORT||`. Outbound, per the node's modes (docs/envoy.md): transparent capture (virtualOutbound
// on 15001 handing off by original destination to per-port listeners), explicit upstreams (one
// loopback listener each) and an HTTP proxy listener routing by Host. Outbound HTTP follows the
// services' VirtualServices (RDS, or inline routes for explicit upstreams) behind the fault filter;
// outbound TCP follows their `tcp` routes (xds/traffic/tcp-routes.ts).
import { isIP } from 'node:net';
import type { FilterChain } from '../../generated/envoy/config/listener/v3/FilterChain.js';
import type { Listener } from '../../generated/envoy/config/listener/v3/Listener.js';
import type { Route } from '../../generated/envoy/config/route/v3/Route.js';
import type { RouteConfiguration } from '../../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { Catalog } from '../../../model/catalog.js';
import { isHttpProtocol, type Service } from '../../../model/service.js';
import type { EnvoyNode } from '../../proxy/envoy-node.js';
import type { GenerateContext } from '../generator.js';
import { routesForHost } from '../../traffic/http-routes.js';
import { routeContext } from '../../traffic/route-context.js';
import { tcpTargetForHost, tcpTargetName } from '../../traffic/tcp-routes.js';
import { ALL_SERVICES, type ServiceScope } from '../../../mesh/sidecar-scope.js';
import {
  BLACKHOLE_CLUSTER,
  clusterName,
  HTTP_PROXY_ROUTE,
  INBOUND_PASSTHROUGH_CLUSTER,
  inboundClusterName,
  PASSTHROUGH_CLUSTER,
  portRouteName,
  socketListenerName,
  VIRTUAL_INBOUND,
  VIRTUAL_OUTBOUND,
} from '../names.js';
import {
  httpConnectionManager,
  meshHcmOptions,
  originalDstFilter,
  singleClusterRoute,
  type HcmOptions,
  socketAddress,
  tcpProxy,
} from './filters.js';
import { PLAINTEXT_INBOUND, type InboundSecurity } from './inbound-tls.js';
import { NO_AUTHZ, type InboundAuthz } from './authz-filters.js';
import { autoAddresses } from '../auto-addresses.js';

export const VIRTUAL_OUTBOUND_PORT = 15001;
export const VIRTUAL_INBOUND_PORT = 15006;

/** One port the proxy receives traffic for, from the co-located endpoints. */
export interface InboundPort {
  readonly address: string;
  readonly port: number;
  readonly http: boolean;
}

/** Co-located endpoint ports, one per port number (the first service by hostname decides the protocol). */
export function inboundPorts(catalog: Catalog, ips: readonly string[]): InboundPort[] {
  const byPort = new Map<number, InboundPort>();
  for (const c of catalog.endpointsByIp(ips)) {
    if (c.servicePort.protocol === 'UDP' || byPort.has(c.port)) continue;
    byPort.set(c.port, {
      address: c.endpoint.address,
      port: c.port,
      http: isHttpProtocol(c.servicePort.protocol),
    });
  }
  return [...byPort.values()].sort((a, b) => a.port - b.port);
}

const OUTBOUND_HCM: HcmOptions = { fault: true };

/** What the inbound listeners are given: mTLS per PeerAuthentication, authorization per policy. */
export interface InboundPolicy {
  readonly security: InboundSecurity;
  readonly authz: InboundAuthz;
}

const OPEN_INBOUND: InboundPolicy = { security: PLAINTEXT_INBOUND, authz: NO_AUTHZ };

/** Outbound listeners are only for service ports in `scope` (the Sidecar resource's egress). */
export function sidecarListeners(
  ctx: GenerateContext,
  node: EnvoyNode,
  scope: ServiceScope = ALL_SERVICES,
  inbound: InboundPolicy = OPEN_INBOUND,
): Map<string, Listener> {
  const { catalog } = ctx;
  const ips = ctx.proxy.ips;
  const out = new Map<string, Listener>();
  const usedAddresses = new Set<string>();
  // Envoy refuses two listeners on one address; the first claim wins (inbound before outbound).
  const add = (l: Listener, bound: boolean): void => {
    const sa = l.address?.socket_address;
    const addressKey = `${sa?.address ?? ''}:${String(sa?.port_value ?? '')}`;
    if (!l.name || out.has(l.name) || (bound && usedAddresses.has(addressKey))) return;
    if (bound) usedAddresses.add(addressKey);
    out.set(l.name, l);
  };
  const transparent = node.outboundModes.includes('transparent');
  const ports = inboundPorts(catalog, ips);
  // Path normalization (mesh-wide): on every HCM, inbound and outbound, as Istio sets it.
  const hcm = meshHcmOptions(ctx.config);
  if (transparent) add(virtualInbound(ports, node, inbound, hcm), true);
  else for (const p of ports) add(inboundListener(p, inbound, hcm), true);
  if (node.outboundModes.includes('explicit'))
    for (const l of upstreamListeners(ctx, node, scope)) add(l, true);
  if (node.outboundModes.includes('http-proxy')) add(httpProxyListener(node.httpProxyPort, hcm), true);
  if (transparent) {
    add(virtualOutbound(node), true);
    for (const l of capturedOutboundListeners(ctx, scope)) add(l, false);
  }
  return out;
}

function inboundChain(p: InboundPort, authz: InboundAuthz, hcm: HcmOptions): FilterChain {
  const cluster = inboundClusterName(p.port);
  return {
    name: cluster,
    filters: p.http
      ? [
          httpConnectionManager(
            cluster,
            { inline: singleClusterRoute(cluster, cluster) },
            { ...hcm, filters: authz.httpFilters() },
          ),
        ]
      : [...authz.networkFilters(), tcpProxy(cluster, cluster)],
  };
}

/** Without capture, Envoy listens on the endpoint's own address and port, the app on loopback. */
function inboundListener(p: InboundPort, { security, authz }: InboundPolicy, hcm: HcmOptions): Listener {
  const listenerFilters = security.listenerFilters([p.port]);
  return {
    name: socketListenerName(p.address, p.port),
    address: socketAddress(p.address, p.port),
    traffic_direction: 'INBOUND',
    ...(listenerFilters.length > 0 && { listener_filters: listenerFilters }),
    filter_chains: security.chains(inboundChain(p, authz, hcm), p.port, p.http),
  };
}

function virtualInbound(
  ports: readonly InboundPort[],
  node: EnvoyNode,
  { security, authz }: InboundPolicy,
  hcm: HcmOptions,
): Listener {
  return {
    name: VIRTUAL_INBOUND,
    address: socketAddress('0.0.0.0', VIRTUAL_INBOUND_PORT),
    traffic_direction: 'INBOUND',
    listener_filters: [originalDstFilter(), ...security.listenerFilters(ports.map((p) => p.port))],
    ...(node.interceptionMode === 'TPROXY' && { transparent: { value: true } }),
    filter_chains: ports.flatMap((p) =>
      security.chains(
        { ...inboundChain(p, authz, hcm), filter_chain_match: { destination_port: { value: p.port } } },
        p.port,
        p.http,
      ),
    ),
    // Ports no service declares pass through, still under the workload's policies (as TCP), as in
    // Istio: an ALLOW policy must not be bypassed by calling an undeclared port.
    default_filter_chain: {
      name: INBOUND_PASSTHROUGH_CLUSTER,
      filters: [
        ...authz.networkFilters(),
        tcpProxy(INBOUND_PASSTHROUGH_CLUSTER, INBOUND_PASSTHROUGH_CLUSTER),
      ],
    },
  };
}

function virtualOutbound(node: EnvoyNode): Listener {
  const fallback = node.outboundPolicy === 'REGISTRY_ONLY' ? BLACKHOLE_CLUSTER : PASSTHROUGH_CLUSTER;
  return {
    name: VIRTUAL_OUTBOUND,
    address: socketAddress('0.0.0.0', VIRTUAL_OUTBOUND_PORT),
    traffic_direction: 'OUTBOUND',
    use_original_dst: { value: true },
    listener_filters: [originalDstFilter()],
    ...(node.interceptionMode === 'TPROXY' && { transparent: { value: true } }),
    filter_chains: [{ name: fallback, filters: [tcpProxy(fallback, fallback)] }],
  };
}

/**
 * Listeners virtualOutbound hands captured connections to (bind_to_port false). HTTP ports share
 * `0.0.0.0_PORT` with RDS named by port; a TCP service gets `VIP_PORT` per virtual IP, or
 * `0.0.0.0_PORT` when it has none and no HTTP service or earlier TCP service holds that port.
 */
function capturedOutboundListeners(ctx: GenerateContext, scope: ServiceScope): Listener[] {
  const { catalog } = ctx;
  // Applications that resolve through the agent's DNS proxy connect to auto-allocated addresses.
  const dnsAutoAllocate = ctx.proxy.envoy?.dnsAutoAllocate ?? false;
  const allocated = autoAddresses(ctx);
  const listeners = new Map<string, Listener>();
  const byPort = new Map<number, { http: boolean; tcp: Service[] }>();
  for (const s of catalog.services()) {
    for (const p of s.ports) {
      if (p.protocol === 'UDP' || !scope(s, p.number)) continue;
      const entry = byPort.get(p.number) ?? { http: false, tcp: [] };
      if (isHttpProtocol(p.protocol)) entry.http = true;
      else entry.tcp.push(s);
      byPort.set(p.number, entry);
    }
  }
  for (const [port, { http, tcp }] of [...byPort.entries()].sort((a, b) => a[0] - b[0])) {
    const wildcard = socketListenerName('0.0.0.0', port);
    if (http) {
      const route = portRouteName(port);
      listeners.set(
        wildcard,
        captured(
          wildcard,
          '0.0.0.0',
          port,
          httpConnectionManager(route, { rds: route }, { ...OUTBOUND_HCM, ...meshHcmOptions(ctx.config) }),
        ),
      );
    }
    for (const s of tcp) {
      const target = tcpTargetForHost(routeContext(ctx, 'envoy', port), s.hostname);
      const proxy = (): ReturnType<typeof tcpProxy> => tcpProxy(tcpTargetName(target), target);
      const own = s.addresses.filter((a) => isIP(a) !== 0);
      const auto = own.length === 0 && dnsAutoAllocate ? allocated.get(s.hostname)?.v4 : undefined;
      const vips = auto ? [auto] : own;
      for (const vip of vips) {
        const name = socketListenerName(vip, port);
        if (!listeners.has(name)) listeners.set(name, captured(name, vip, port, proxy()));
      }
      if (vips.length === 0 && !listeners.has(wildcard))
        listeners.set(wildcard, captured(wildcard, '0.0.0.0', port, proxy()));
    }
  }
  return [...listeners.values()];
}

function captured(
  name: string,
  address: string,
  port: number,
  filter: NonNullable<FilterChain['filters']>[number],
): Listener {
  return {
    name,
    address: socketAddress(address, port),
    traffic_direction: 'OUTBOUND',
    bind_to_port: { value: false },
    filter_chains: [{ filters: [filter] }],
  };
}

/**
 * One loopback listener per declared upstream whose service exists and is in scope (NONE services
 * cannot be: no destination).
 */
function upstreamListeners(ctx: GenerateContext, node: EnvoyNode, scope: ServiceScope): Listener[] {
  const { catalog } = ctx;
  const out: Listener[] = [];
  for (const u of node.upstreams) {
    const service = catalog.service(u.hostname);
    const port = service?.ports.find((p) => p.number === u.port);
    if (!service || !port || service.resolution === 'NONE' || !scope(service, port.number)) continue;
    const cluster = clusterName('outbound', port.number, '', service.hostname);
    const routing = routeContext(ctx, 'envoy', port.number);
    const name = socketListenerName(u.bind, u.localPort);
    out.push({
      name,
      address: socketAddress(u.bind, u.localPort),
      traffic_direction: 'OUTBOUND',
      filter_chains: [
        {
          filters: [
            isHttpProtocol(port.protocol)
              ? httpConnectionManager(
                  cluster,
                  { inline: upstreamRoute(cluster, routesForHost(routing, service.hostname)) },
                  { ...OUTBOUND_HCM, ...meshHcmOptions(ctx.config) },
                )
              : tcpProxy(cluster, tcpTargetForHost(routing, service.hostname)),
          ],
        },
      ],
    });
  }
  return out;
}

function httpProxyListener(port: number, hcm: HcmOptions): Listener {
  return {
    name: socketListenerName('127.0.0.1', port),
    address: socketAddress('127.0.0.1', port),
    traffic_direction: 'OUTBOUND',
    filter_chains: [
      {
        filters: [
          httpConnectionManager(
            HTTP_PROXY_ROUTE,
            { rds: HTTP_PROXY_ROUTE },
            { absoluteUrls: true, ...OUTBOUND_HCM, ...hcm },
          ),
        ],
      },
    ],
  };
}

/** An explicit upstream's inline route configuration: whatever Host the app sends, the service's routes. */
function upstreamRoute(name: string, routes: Route[]): RouteConfiguration {
  return { name, virtual_hosts: [{ name, domains: ['*'], routes }] };
}
