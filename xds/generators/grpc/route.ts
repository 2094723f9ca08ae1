// RDS for proxyless gRPC (gRFC A28): one virtual host for the service, matched by the authority the
// client dials (HOST or HOST:PORT). Its routes are the service's VirtualService as gRPC can take it
// (xds/traffic/http-routes.ts), or the default route to the service port's cluster.
import type { RouteConfiguration } from '../../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { ResourceGenerator } from '../generator.js';
import { grpcListenerName, hostPortHost } from '../names.js';
import { encodeResource } from '../../proto/resource.js';
import { routesForHost } from '../../traffic/http-routes.js';
import { routeContext, routeViewKey } from '../../traffic/route-context.js';
import { ROUTE } from '../../proto/type-urls.js';
import { resolveServicePort } from './service-port.js';

export const grpcRouteGenerator: ResourceGenerator = {
  typeUrl: ROUTE,
  proxyKind: 'grpc',
  hostOf: hostPortHost,
  // VirtualService visibility and sourceLabels matches depend on the client's namespace and labels.
  viewKey: routeViewKey,
  wildcardNames: () => [],
  build(ctx, name) {
    const resolved = resolveServicePort(ctx.catalog, name);
    if (!resolved || resolved.service.resolution === 'NONE') return undefined;
    const { service, port } = resolved;
    // Served only under its canonical HOST:PORT name, the one our listeners reference.
    if (name !== grpcListenerName(service.hostname, port.number)) return undefined;
    const domains = [name];
    if (service.ports.length === 1) domains.push(service.hostname);
    const routes = routesForHost(routeContext(ctx, 'grpc', port.number), service.hostname);
    const config: RouteConfiguration = { name, virtual_hosts: [{ name, domains, routes }] };
    return encodeResource(ROUTE, name, config);
  },
};
