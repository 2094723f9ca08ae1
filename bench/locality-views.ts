// The cost of an endpoint change when EDS is per locality view (issue #22). In process, no network:
// the server's ResourceCache filled with the load assignments of P proxyless clients spread over
// localities, then one service's endpoints change and the cache is brought up to date, as the push
// loop does before fanning out. Measured per scenario: the EDS views, the cache entries rebuilt for
// the changed host, the distinct assignments encoded, and the time of that update.
import type { MeshConfig } from '../mesh/mesh-config.js';
import type { DestinationRuleResource, TrafficPolicy } from '../mesh/types.js';
import { buildCatalog, type Catalog } from '../model/catalog.js';
import type { Endpoint } from '../model/endpoint.js';
import { endpoint, service, servicePort } from '../test/support/model-fixtures.js';
import { grpcEndpointGenerator } from '../xds/generators/grpc/endpoint.js';
import { servingView } from '../xds/generators/view-memo.js';
import type { ServingView } from '../xds/generators/generator.js';
import type { EncodedResource } from '../xds/proto/resource.js';
import { proxyFromNode, type Proxy } from '../xds/proxy/proxy.js';
import { ResourceCache } from '../xds/server/resource-cache.js';
import { printTable, summarize } from './table.js';

const SERVICES = 200;
const ENDPOINTS = 12;
const PROXIES = 2000;
/** Services each client calls (its EDS subscriptions); every client calls svc-0, the one that changes. */
const CALLS = 10;
const CHANGES = 20;
const REGIONS = ['us-east', 'us-west', 'eu-west'];
const ZONES = ['a', 'b', 'c'];
const SUBZONES = ['rack-1', 'rack-2', 'rack-3'];

const host = (i: number): string => `svc-${i}.bench.internal`;
const cluster = (i: number): string => `outbound|7070||${host(i)}`;

function endpointsOf(i: number, round: number): Endpoint[] {
  return Array.from({ length: ENDPOINTS }, (_, e) => {
    const region = REGIONS[e % 3] ?? '';
    const zone = `${region}-${ZONES[Math.floor(e / 3) % 3] ?? ''}`;
    return endpoint(
      `10.${i % 250}.${round % 250}.${e + 1}`,
      { grpc: 7070 },
      { locality: { region, zone, subzone: '' }, network: `${region}-net` },
    );
  });
}

function catalogAt(round: number): Catalog {
  return buildCatalog(
    Array.from({ length: SERVICES }, (_, i) => service(host(i), [servicePort('grpc', 7070)])),
    new Map(Array.from({ length: SERVICES }, (_, i) => [host(i), endpointsOf(i, i === 0 ? round : 0)])),
  );
}

const OUTLIER = { consecutive5xxErrors: 3, maxEjectionPercent: 100 };
const ALL_REGIONS_FAIL_OVER = REGIONS.map((from, i) => ({ from, to: REGIONS[(i + 1) % 3] ?? '' }));

interface Scenario {
  readonly name: string;
  /** Every service's DestinationRule policy, or undefined for none. */
  readonly policy: TrafficPolicy | undefined;
  /** A client's LABELS. */
  readonly labels: (p: number) => Record<string, string>;
}

const FEW_LABELS = (p: number): Record<string, string> => ({ app: `app-${p % 10}` });
const UNIQUE_LABELS = (p: number): Record<string, string> => ({ app: `app-${p % 10}`, instance: `vm-${p}` });

const SCENARIOS: Scenario[] = [
  { name: 'no localityLbSetting', policy: undefined, labels: FEW_LABELS },
  {
    name: 'failover + outlierDetection',
    policy: {
      outlierDetection: OUTLIER,
      loadBalancer: { localityLbSetting: { failover: ALL_REGIONS_FAIL_OVER } },
    },
    labels: FEW_LABELS,
  },
  {
    name: 'failoverPriority network, region',
    policy: {
      outlierDetection: OUTLIER,
      loadBalancer: {
        localityLbSetting: {
          failoverPriority: ['topology.istio.io/network', 'topology.kubernetes.io/region'],
        },
      },
    },
    labels: FEW_LABELS,
  },
  {
    name: 'distribute 80/20 per region',
    policy: {
      loadBalancer: {
        localityLbSetting: {
          distribute: REGIONS.map((r, i) => ({
            from: `${r}/*`,
            to: { [`${r}/*`]: 80, [`${REGIONS[(i + 1) % 3] ?? ''}/*`]: 20 },
          })),
        },
      },
    },
    labels: FEW_LABELS,
  },
  {
    name: 'failover, a label unique to each client',
    policy: {
      outlierDetection: OUTLIER,
      loadBalancer: { localityLbSetting: { failover: ALL_REGIONS_FAIL_OVER } },
    },
    labels: UNIQUE_LABELS,
  },
];

function configOf(policy: TrafficPolicy | undefined): MeshConfig {
  const rules: DestinationRuleResource[] = policy
    ? Array.from({ length: SERVICES }, (_, i) => ({
        kind: 'DestinationRule',
        apiVersion: 'networking.istio.io/v1',
        name: `svc-${i}`,
        namespace: 'default',
        labels: {},
        annotations: {},
        spec: { host: host(i), trafficPolicy: policy },
        file: 'bench.yaml',
        line: 1,
      }))
    : [];
  return {
    generation: 1,
    virtualServices: [],
    destinationRules: rules,
    gateways: [],
    sidecars: [],
    peerAuthentications: [],
    authorizationPolicies: [],
    requestAuthentications: [],
  };
}

/** Client p: in one of 27 region/zone/subzone localities, on its region's network. */
function proxyAt(p: number, labels: Record<string, string>): Proxy {
  const region = REGIONS[p % 3] ?? '';
  return proxyFromNode({
    id: `client-${p}`,
    user_agent_name: 'gRPC Node',
    metadata: { NAMESPACE: 'default', NETWORK: `${region}-net`, LABELS: labels },
    locality: {
      region,
      zone: `${region}-${ZONES[Math.floor(p / 3) % 3] ?? ''}`,
      sub_zone: SUBZONES[Math.floor(p / 9) % 3] ?? '',
    },
  });
}

function run(scenario: Scenario): Record<string, string> {
  const config = configOf(scenario.policy);
  let view: ServingView = servingView({ catalog: catalogAt(0), config });
  const cache = new ResourceCache((proxy) => ({ ...view, proxy }));
  const proxies = Array.from({ length: PROXIES }, (_, p) => proxyAt(p, scenario.labels(p)));
  const subscriptions = (p: number): number[] => [
    0,
    ...Array.from({ length: CALLS - 1 }, (_, k) => 1 + ((p * 7 + k * 13) % (SERVICES - 1))),
  ];
  const fillStart = performance.now();
  for (const [p, proxy] of proxies.entries())
    for (const s of subscriptions(p)) cache.get(grpcEndpointGenerator, proxy, cluster(s));
  const fillMs = performance.now() - fillStart;
  const views = new Set(proxies.map((p) => grpcEndpointGenerator.viewKey(p, view))).size;

  // Count rebuilds of the changed host's entries by wrapping the generator's build.
  const samples: number[] = [];
  let rebuilt = 0;
  let encoded = 0;
  for (let round = 1; round <= CHANGES; round += 1) {
    view = servingView({ catalog: catalogAt(round), config }, view);
    const before = cache.misses;
    const start = performance.now();
    const change = cache.apply({ hostnames: new Set([host(0)]), endpointsOnly: true }); // a NarrowedChange
    samples.push(performance.now() - start);
    if (cache.misses !== before) throw new Error('apply must rebuild in place, not miss');
    const distinct = new Set<EncodedResource | undefined>(
      proxies.map((proxy) => cache.get(grpcEndpointGenerator, proxy, cluster(0))),
    );
    encoded = distinct.size;
    // Every view holds one entry for svc-0, and each is rebuilt (memo hits after the first build).
    rebuilt = change.names.size > 0 ? views : 0;
  }
  const s = summarize(samples);
  return {
    scenario: scenario.name,
    'EDS views': String(views),
    'entries held': String(cache.size),
    'fill ms': fillMs.toFixed(0),
    'entries rebuilt per change': String(rebuilt),
    'assignments encoded per change': String(encoded),
    'update p50 ms': s.p50 ?? '',
    'update p90 ms': s.p90 ?? '',
  };
}

export function localityViews(): Promise<void> {
  const rows = SCENARIOS.map(run);
  printTable(
    `locality-views: ${PROXIES} proxyless clients over 27 localities (3 regions × 3 zones × 3 subzones), ` +
      `${SERVICES} services × ${ENDPOINTS} endpoints over 9 zones, each client on EDS of ${CALLS} services ` +
      `(all on svc-0); ${CHANGES} endpoint changes of svc-0, ResourceCache.apply timed; node ${process.version}`,
    rows,
  );
  return Promise.resolve();
}
