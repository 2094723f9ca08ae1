// EDS for proxyless gRPC: the shared load-assignment builder, and BlackHoleCluster's assignment
// without endpoints (grpc/cluster.ts).
import type { ResourceGenerator } from '../generator.js';
import { BLACKHOLE_CLUSTER, clusterHost } from '../names.js';
import { encodeResource } from '../../proto/resource.js';
import { ENDPOINT } from '../../proto/type-urls.js';
import { buildLoadAssignment, loadAssignmentViewKey, loadAssignmentViewKeyReads } from '../endpoints.js';

export const grpcEndpointGenerator: ResourceGenerator = {
  typeUrl: ENDPOINT,
  proxyKind: 'grpc',
  hostOf: clusterHost,
  viewKey: loadAssignmentViewKey,
  viewKeyReads: loadAssignmentViewKeyReads,
  wildcardNames: () => [],
  build: (ctx, name) =>
    name === BLACKHOLE_CLUSTER
      ? encodeResource(ENDPOINT, name, { cluster_name: name, endpoints: [] })
      : buildLoadAssignment(ctx, name),
};
