// Route configurations of Envoy sidecars. `PORT` (for the captured `0.0.0.0_PORT` listener): one
// virtual host per HTTP service on that port, matched by HOST, HOST:PORT and its virtual IPs, then
// a catch-all per the outbound policy. `http_proxy`: every HTTP service port by HOST:PORT. Both hold
// only the services in the proxy's Sidecar scope. A virtual host's routes are the service's
// VirtualService (xds/traffic/http-routes.ts) or its default route.
import { isIP } from 'node:net';
import type { RouteConfiguration } from '../../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { VirtualHost } from '../../generated/envoy/config/route/v3/VirtualHost.js';
import { isHttpProtocol, type Service } from '../../../model/service.js';
import type { OutboundPolicy } from '../../proxy/envoy-node.js';
import type { GenerateContext } from '../generator.js';
import { HTTP_PROXY_ROUTE, PASSTHROUGH_CLUSTER, portRouteName } from '../names.js';
import { routesForHost } from '../../traffic/http-routes.js';
import { routeContext } from '../../traffic/route-context.js';
import { ALL_SERVICES, type ServiceScope } from '../../../mesh/sidecar-scope.js';

export function portRoute(
  ctx: GenerateContext,
  port: number,
  policy: OutboundPolicy,
  scope: ServiceScope = ALL_SERVICES,
): RouteConfiguration | undefined {
  const services = ctx.catalog
    .services()
    .filter((s) => s.ports.some((p) => p.number === port && isHttpProtocol(p.protocol)) && scope(s, port));
  if (services.length === 0) return undefined;
  const used = new Set<string>();
  const hosts: VirtualHost[] = [];
  for (const s of services) {
    const domains = uniqueDomains(used, [s.hostname, `${s.hostname}:${port}`, ...vipDomains(s, port)]);
    if (domains.length > 0) hosts.push(serviceHost(ctx, s, port, domains));
  }
  return {
    name: portRouteName(port),
    virtual_hosts: [...hosts, catchAll(policy)],
    validate_clusters: { value: false },
  };
}

export function httpProxyRoute(ctx: GenerateContext, scope: ServiceScope = ALL_SERVICES): RouteConfiguration {
  const used = new Set<string>();
  const hosts: VirtualHost[] = [];
  for (const s of ctx.catalog.services()) {
    if (s.resolution === 'NONE') continue; // nowhere to send it: a forward proxy has no original destination
    for (const p of s.ports) {
      if (!isHttpProtocol(p.protocol) || !scope(s, p.number)) continue;
      const domains = [`${s.hostname}:${p.number}`, ...(p.number === 80 ? [s.hostname] : [])];
      const unique = uniqueDomains(used, domains);
      if (unique.length > 0) hosts.push(serviceHost(ctx, s, p.number, unique));
    }
  }
  return { name: HTTP_PROXY_ROUTE, virtual_hosts: hosts };
}

function serviceHost(ctx: GenerateContext, s: Service, port: number, domains: string[]): VirtualHost {
  return {
    name: `${s.hostname}:${port}`,
    domains,
    routes: routesForHost(routeContext(ctx, 'envoy', port), s.hostname),
  };
}

// ALLOW_ANY sends unknown hosts on to where they were going; REGISTRY_ONLY answers 502, like Istio.
function catchAll(policy: OutboundPolicy): VirtualHost {
  if (policy === 'ALLOW_ANY')
    return {
      name: 'allow_any',
      domains: ['*'],
      routes: [{ name: 'allow_any', match: { prefix: '/' }, route: { cluster: PASSTHROUGH_CLUSTER } }],
    };
  return {
    name: 'block_all',
    domains: ['*'],
    routes: [{ name: 'block_all', match: { prefix: '/' }, direct_response: { status: 502 } }],
  };
}

function vipDomains(s: Service, port: number): string[] {
  return s.addresses.filter((a) => isIP(a) !== 0).flatMap((a) => [a, `${a}:${port}`]);
}

// Envoy rejects a route configuration in which two virtual hosts claim one domain.
function uniqueDomains(used: Set<string>, domains: readonly string[]): string[] {
  const out: string[] = [];
  for (const d of domains) {
    if (used.has(d)) continue;
    used.add(d);
    out.push(d);
  }
  return out;
}
