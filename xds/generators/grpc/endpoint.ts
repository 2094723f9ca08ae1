// EDS for proxyless gRPC: the shared load-assignment builder; the resources do not depend on the proxy.
import type { ResourceGenerator } from '../../generator.js';
import { ENDPOINT } from '../../type-urls.js';
import { buildLoadAssignment } from '../endpoints.js';

export const grpcEndpointGenerator: ResourceGenerator = {
  typeUrl: ENDPOINT,
  proxyKind: 'grpc',
  viewKey: () => '',
  wildcardNames: () => [],
  build: (ctx, name) => buildLoadAssignment(ctx.catalog, name),
};
