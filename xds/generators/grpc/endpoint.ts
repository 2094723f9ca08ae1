// EDS for proxyless gRPC: the shared load-assignment builder.
import type { ResourceGenerator } from '../generator.js';
import { ENDPOINT } from '../../proto/type-urls.js';
import { buildLoadAssignment, loadAssignmentViewKey, loadAssignmentViewKeyReads } from '../endpoints.js';

export const grpcEndpointGenerator: ResourceGenerator = {
  typeUrl: ENDPOINT,
  proxyKind: 'grpc',
  configByHost: true,
  wholeKinds: () => [],
  viewKey: loadAssignmentViewKey,
  viewKeyReads: loadAssignmentViewKeyReads,
  wildcardNames: () => [],
  build: (ctx, name) => buildLoadAssignment(ctx, name),
};
