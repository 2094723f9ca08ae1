// RDS for proxyless gRPC (gRFC A28): one virtual host for the service, matched by the authority the
// client dials (HOST or HOST:PORT), with a default route to the service port's cluster.
import type { RouteConfiguration } from '../../generated/envoy/config/route/v3/RouteConfiguration.js';
import type { ResourceGenerator } from '../../generator.js';
import { clusterName, grpcListenerName } from '../../names.js';
import { encodeResource } from '../../resource.js';
import { ROUTE } from '../../type-urls.js';
import { resolveServicePort } from './service-port.js';

export const grpcRouteGenerator: ResourceGenerator = {
  typeUrl: ROUTE,
  proxyKind: 'grpc',
  viewKey: () => '',
  wildcardNames: () => [],
  build(ctx, name) {
    const resolved = resolveServicePort(ctx.catalog, name);
    if (!resolved || resolved.service.resolution === 'NONE') return undefined;
    const { service, port } = resolved;
    // Served only under its canonical HOST:PORT name, the one our listeners reference.
    if (name !== grpcListenerName(service.hostname, port.number)) return undefined;
    const domains = [name];
    if (service.ports.length === 1) domains.push(service.hostname);
    const config: RouteConfiguration = {
      name,
      virtual_hosts: [
        {
          name,
          domains,
          routes: [
            {
              match: { prefix: '/' },
              route: { cluster: clusterName('outbound', port.number, '', service.hostname) },
            },
          ],
        },
      ],
    };
    return encodeResource(ROUTE, name, config);
  },
};
