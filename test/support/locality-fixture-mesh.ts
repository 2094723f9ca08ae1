// A mesh for locality load balancing (the golden cases envoy-sidecar-locality and
// grpc-client-locality): services with endpoints across regions, zones, subzones and networks, and
// one DestinationRule per kind of localityLbSetting — failover (with outlier detection),
// failoverPriority by network and region, and distribute.
import { buildCatalog, type Catalog } from '../../model/catalog.js';
import type { Endpoint, Locality } from '../../model/endpoint.js';
import type { DestinationRuleResource, DestinationRuleSpec } from '../../mesh/types.js';
import { endpoint, service, servicePort } from './model-fixtures.js';

export const FAILOVER = 'failover.locality.test';
export const PRIORITY = 'priority.locality.test';
export const DISTRIBUTE = 'distribute.locality.test';

/** Where the golden nodes run: us-east/us-east-1a/rack-1 on east-net. */
export const NODE_LOCALITY = { region: 'us-east', zone: 'us-east-1a', sub_zone: 'rack-1' };
export const NODE_NETWORK = 'east-net';

const at = (region: string, zone: string, subzone = ''): Locality => ({ region, zone, subzone });

export function localityCatalog(): Catalog {
  const spread = (base: string, port: Record<string, number>): Endpoint[] => [
    endpoint(`${base}.1`, port, { locality: at('us-east', 'us-east-1a', 'rack-1'), network: 'east-net' }),
    endpoint(`${base}.2`, port, { locality: at('us-east', 'us-east-1a', 'rack-2'), network: 'east-net' }),
    endpoint(`${base}.3`, port, { locality: at('us-east', 'us-east-1b'), network: 'east-net', weight: 2 }),
    endpoint(`${base}.4`, port, { locality: at('us-west', 'us-west-2a'), network: 'west-net' }),
    endpoint(`${base}.5`, port, { locality: at('eu-west', 'eu-west-1a'), network: 'east-net' }),
  ];
  const grpc = { grpc: 7070 };
  return buildCatalog(
    [FAILOVER, PRIORITY, DISTRIBUTE].map((h) => service(h, [servicePort('grpc', 7070)])),
    new Map([
      [FAILOVER, spread('10.1.0', grpc)],
      [PRIORITY, spread('10.2.0', grpc)],
      [DISTRIBUTE, spread('10.3.0', grpc)],
    ]),
  );
}

const OUTLIER = { consecutive5xxErrors: 3, interval: '5s', baseEjectionTime: '30s', maxEjectionPercent: 100 };

export function localityDestinationRules(): DestinationRuleResource[] {
  const dr = (host: string, spec: Omit<DestinationRuleSpec, 'host'>): DestinationRuleResource => ({
    kind: 'DestinationRule',
    apiVersion: 'networking.istio.io/v1',
    name: host.split('.')[0] ?? host,
    namespace: 'default',
    labels: {},
    annotations: {},
    spec: { host, ...spec },
    file: 'golden.yaml',
    line: 1,
  });
  return [
    dr(FAILOVER, {
      trafficPolicy: {
        outlierDetection: OUTLIER,
        loadBalancer: { localityLbSetting: { failover: [{ from: 'us-east', to: 'us-west' }] } },
      },
    }),
    dr(PRIORITY, {
      trafficPolicy: {
        outlierDetection: OUTLIER,
        loadBalancer: {
          localityLbSetting: {
            failoverPriority: ['topology.istio.io/network', 'topology.kubernetes.io/region'],
          },
        },
      },
    }),
    dr(DISTRIBUTE, {
      trafficPolicy: {
        loadBalancer: {
          localityLbSetting: {
            distribute: [{ from: 'us-east/*', to: { 'us-east/*': 80, 'us-west/*': 20 } }],
          },
        },
      },
    }),
  ];
}
