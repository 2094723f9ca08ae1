// CDS for proxyless gRPC (gRFCs A27, A37): `outbound|PORT||HOST` as an EDS cluster over ADS, or a
// LOGICAL_DNS cluster for DNS-resolved services. NONE-resolution services have no gRPC form. A subset
// cluster `outbound|PORT|SUBSET|HOST` (asked for by a route) is an EDS cluster like the default one,
// served when a DestinationRule the client's namespace sees defines the subset.
import type { Cluster } from '../../generated/envoy/config/cluster/v3/Cluster.js';
import type { ResourceGenerator } from '../../generator.js';
import { clusterName, parseClusterName } from '../../names.js';
import { encodeResource } from '../../resource.js';
import { CLUSTER } from '../../type-urls.js';
import { findPort } from '../../../model/service.js';
import { findSubset } from '../../traffic/subsets.js';
import { loadAssignmentViewKey } from '../endpoints.js';

export const grpcClusterGenerator: ResourceGenerator = {
  typeUrl: CLUSTER,
  proxyKind: 'grpc',
  // Which subsets exist depends on the DestinationRules the client's namespace sees.
  viewKey: loadAssignmentViewKey,
  wildcardNames: (ctx) =>
    ctx.catalog
      .services()
      .filter((s) => s.resolution !== 'NONE')
      .flatMap((s) => s.ports.map((p) => clusterName('outbound', p.number, '', s.hostname))),
  build(ctx, name) {
    const key = parseClusterName(name);
    if (!key || key.direction !== 'outbound') return undefined;
    const service = ctx.catalog.service(key.hostname);
    const port = service && findPort(service, key.port);
    if (!service || !port || service.resolution === 'NONE') return undefined;
    if (key.subset !== '') {
      if (service.resolution !== 'STATIC') return undefined;
      if (!findSubset(ctx.config, ctx.catalog, service.hostname, key.subset, ctx.proxy.namespace))
        return undefined;
    }
    if (service.resolution === 'DNS') {
      const first = ctx.catalog.endpoints(service.hostname, port.number)[0];
      const cluster: Cluster = {
        name,
        type: 'LOGICAL_DNS',
        lb_policy: 'ROUND_ROBIN',
        load_assignment: {
          cluster_name: name,
          endpoints: [
            {
              lb_endpoints: [
                {
                  endpoint: {
                    address: {
                      socket_address: {
                        address: first?.endpoint.address ?? service.hostname,
                        port_value: first?.port ?? port.number,
                      },
                    },
                  },
                },
              ],
            },
          ],
        },
      };
      return encodeResource(CLUSTER, name, cluster);
    }
    const cluster: Cluster = {
      name,
      type: 'EDS',
      eds_cluster_config: { service_name: name, eds_config: { ads: {}, resource_api_version: 'V3' } },
      lb_policy: 'ROUND_ROBIN',
    };
    return encodeResource(CLUSTER, name, cluster);
  },
};
