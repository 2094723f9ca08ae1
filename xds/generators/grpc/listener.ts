// LDS for proxyless gRPC (gRFC A27): a listener named HOST:PORT holding only an api_listener whose
// HttpConnectionManager fetches its routes over ADS and ends in the router filter; the fault filter
// (gRFC A33) goes before it while any VirtualService injects faults, so other configs stay as before.
import type { Listener } from '../../generated/envoy/config/listener/v3/Listener.js';
import type { HttpConnectionManager } from '../../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import type { GenerateContext, ResourceGenerator } from '../generator.js';
import { grpcListenerName, hostPortHost } from '../names.js';
import { encodeResource, toAny } from '../../proto/resource.js';
import { faultHttpFilter } from '../../traffic/fault.js';
import { LISTENER } from '../../proto/type-urls.js';
import { grpcLabels, grpcServerListener, isGrpcServerListenerName } from './server-listener.js';
import { allHostPorts, resolveServicePort } from './service-port.js';

const HCM_TYPE =
  'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const ROUTER_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router';

export const grpcListenerGenerator: ResourceGenerator = {
  typeUrl: LISTENER,
  proxyKind: 'grpc',
  hostOf: hostPortHost,
  // Server listeners (A36) depend on the server's namespace and labels (PeerAuthentication).
  viewKey: (proxy) => JSON.stringify([proxy.namespace, grpcLabels(proxy)]),
  wildcardNames: (ctx: GenerateContext) => allHostPorts(ctx.catalog),
  build(ctx, name) {
    if (isGrpcServerListenerName(name)) return grpcServerListener(ctx, name);
    const resolved = resolveServicePort(ctx.catalog, name);
    if (!resolved || resolved.service.resolution === 'NONE') return undefined;
    const routeName = grpcListenerName(resolved.service.hostname, resolved.port.number);
    const hcm: HttpConnectionManager = {
      stat_prefix: routeName,
      rds: { route_config_name: routeName, config_source: { ads: {}, resource_api_version: 'V3' } },
      http_filters: [
        ...(ctx.faults ? [faultHttpFilter()] : []),
        { name: 'envoy.filters.http.router', typed_config: toAny(ROUTER_TYPE, {}) },
      ],
    };
    // The listener keeps the name the client asked for (HOST or HOST:PORT): gRPC matches it exactly.
    const listener: Listener = { name, api_listener: { api_listener: toAny(HCM_TYPE, hcm) } };
    return encodeResource(LISTENER, name, listener);
  },
};
