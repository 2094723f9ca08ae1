// Locality load balancing as Istio renders localityLbSetting: priorities by closeness (and the rule
// that they need outlier detection), `failover`, `failoverPriority` with topology labels and
// key=value entries, `distribute` weights; the proxy's locality from its node; one encoded load
// assignment per distinct locality view; the Envoy cluster's locality-weighted balancing; and the
// configz limitation for failover without outlier detection.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type { DestinationRuleResource, LocalityLbSetting, TrafficPolicy } from '../../../mesh/types.js';
import { buildCatalog, type Catalog } from '../../../model/catalog.js';
import type { Endpoint, Locality } from '../../../model/endpoint.js';
import { grpcEndpointGenerator } from '../../../xds/generators/grpc/endpoint.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { generateContext, servingView } from '../../../xds/generators/serving-view.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { CLUSTER, ENDPOINT } from '../../../xds/proto/type-urls.js';
import { proxyFromNode, type NodeInfo, type Proxy } from '../../../xds/proxy/proxy.js';
import { ResourceCache } from '../../../xds/server/resource-cache.js';
import { trafficLimitations } from '../../../xds/traffic/limitations.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';

const HOST = 'echo.mesh.internal';
const NAME = `outbound|7070||${HOST}`;
const OUTLIER = { consecutive5xxErrors: 3 };

const loc = (region: string, zone = '', subzone = ''): Locality => ({ region, zone, subzone });

function catalogOf(endpoints: Endpoint[]): Catalog {
  return buildCatalog([service(HOST, [servicePort('grpc', 7070)])], new Map([[HOST, endpoints]]));
}

/** One endpoint per locality, named by its address. */
function at(address: string, locality: Locality, overrides: Partial<Endpoint> = {}): Endpoint {
  return endpoint(address, { grpc: 7070 }, { locality, ...overrides });
}

let generation = 1;
function configWith(trafficPolicy: TrafficPolicy | undefined): MeshConfig {
  const rule: DestinationRuleResource = {
    kind: 'DestinationRule',
    apiVersion: 'networking.istio.io/v1',
    name: 'echo',
    namespace: 'default',
    labels: {},
    annotations: {},
    spec: { host: HOST, ...(trafficPolicy && { trafficPolicy }) },
    file: 'dr.yaml',
    line: 1,
  };
  generation += 1;
  return {
    generation,
    virtualServices: [],
    destinationRules: trafficPolicy ? [rule] : [],
    gateways: [],
    sidecars: [],
    peerAuthentications: [],
    authorizationPolicies: [],
    requestAuthentications: [],
  };
}

function lb(setting: LocalityLbSetting, outlier = true): TrafficPolicy {
  return { loadBalancer: { localityLbSetting: setting }, ...(outlier && { outlierDetection: OUTLIER }) };
}

function grpcProxy(locality: Locality, metadata: Record<string, unknown> = {}): Proxy {
  return proxyFromNode({
    id: `client-${Math.random()}`,
    user_agent_name: 'gRPC Node',
    metadata: { NAMESPACE: 'default', ...metadata },
    locality: { region: locality.region, zone: locality.zone, sub_zone: locality.subzone },
  });
}

interface Group {
  priority: number;
  weight: number;
  addresses: string[];
}

/** The load assignment a proxy gets, as (priority, weight, addresses) per locality group. */
function groups(proxy: Proxy, catalog: Catalog, config: MeshConfig): Group[] {
  const r = grpcEndpointGenerator.build(generateContext({ proxy, catalog, config }), NAME);
  const cla = decodeAny(ENDPOINT, r?.value ?? assert.fail('no assignment')) as {
    endpoints?: {
      priority?: number;
      load_balancing_weight?: { value: number };
      lb_endpoints: { endpoint: { address: { socket_address: { address: string } } } }[];
    }[];
  };
  return (cla.endpoints ?? []).map((g) => ({
    priority: g.priority ?? 0,
    weight: g.load_balancing_weight?.value ?? 0,
    addresses: g.lb_endpoints.map((e) => e.endpoint.address.socket_address.address),
  }));
}

const byPriority = (gs: Group[]): string[][] => {
  const out: string[][] = [];
  for (const g of gs) (out[g.priority] ??= []).push(...g.addresses);
  return out.map((a) => a.sort());
};

// Istio's failover task: a proxy in region1/zone1, endpoints in region1/zone1, region1/zone2,
// region2/zone3, region3/zone4.
const ISTIO_TASK = catalogOf([
  at('10.0.0.1', loc('region1', 'zone1')),
  at('10.0.0.2', loc('region1', 'zone2')),
  at('10.0.0.3', loc('region2', 'zone3')),
  at('10.0.0.4', loc('region3', 'zone4')),
]);
const TASK_PROXY = grpcProxy(loc('region1', 'zone1'));

test('default failover with outlier detection: same zone, same region, then the rest, renumbered without gaps', () => {
  assert.deepEqual(byPriority(groups(TASK_PROXY, ISTIO_TASK, configWith({ outlierDetection: OUTLIER }))), [
    ['10.0.0.1'],
    ['10.0.0.2'],
    ['10.0.0.3', '10.0.0.4'],
  ]);
  const subzones = catalogOf([
    at('10.0.1.1', loc('r', 'z', 's1')),
    at('10.0.1.2', loc('r', 'z', 's2')),
    at('10.0.1.3', loc('r', 'y')),
    at('10.0.1.4', loc('q', 'z', 's1')),
  ]);
  assert.deepEqual(
    byPriority(groups(grpcProxy(loc('r', 'z', 's1')), subzones, configWith({ outlierDetection: OUTLIER }))),
    [['10.0.1.1'], ['10.0.1.2'], ['10.0.1.3'], ['10.0.1.4']],
    'a different region never counts as close, whatever its zone is called',
  );
});

test('failover: the named region comes before the other regions (Istio’s task table)', () => {
  const config = configWith(lb({ failover: [{ from: 'region1', to: 'region2' }] }));
  // Istio's table: 0 region1/zone1, (1 no subzone), 2 region1/zone2, 3 region2, 4 region3.
  assert.deepEqual(byPriority(groups(TASK_PROXY, ISTIO_TASK, config)), [
    ['10.0.0.1'],
    ['10.0.0.2'],
    ['10.0.0.3'],
    ['10.0.0.4'],
  ]);
  // A proxy in a region no failover entry names keeps the default order.
  assert.deepEqual(byPriority(groups(grpcProxy(loc('region3', 'zone4')), ISTIO_TASK, config)), [
    ['10.0.0.4'],
    ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
  ]);
});

test('no outlier detection, or enabled: false: no priorities (Istio’s rule), every locality at 0', () => {
  for (const policy of [
    lb({ failover: [{ from: 'region1', to: 'region2' }] }, false),
    lb({ enabled: true }, false),
    lb({ enabled: false }),
    undefined,
  ]) {
    const gs = groups(TASK_PROXY, ISTIO_TASK, configWith(policy));
    assert.deepEqual(
      gs.map((g) => g.priority),
      [0, 0, 0, 0],
      JSON.stringify(policy),
    );
  }
});

test('failoverPriority: leading labels matched, topology labels from network and locality, key=value', () => {
  const catalog = catalogOf([
    at('10.0.2.1', loc('r1', 'z1'), { network: 'n1', labels: { version: 'v1' } }),
    at('10.0.2.2', loc('r2', 'z1'), { network: 'n1', labels: { version: 'v1' } }),
    at('10.0.2.3', loc('r1', 'z1'), { network: 'n2', labels: { version: 'v2' } }),
    // Same locality as the first, other network: the group splits across priorities.
    at('10.0.2.4', loc('r1', 'z1'), { network: 'n2', labels: { version: 'v1' } }),
  ]);
  const proxy = grpcProxy(loc('r1', 'z9'), { NETWORK: 'n1' });
  const config = configWith(
    lb({ failoverPriority: ['topology.istio.io/network', 'topology.kubernetes.io/region'] }),
  );
  assert.deepEqual(byPriority(groups(proxy, catalog, config)), [
    ['10.0.2.1'],
    ['10.0.2.2'],
    ['10.0.2.3', '10.0.2.4'],
  ]);
  // key=value compares endpoints with the value, whatever the proxy's labels.
  const pinned = configWith(lb({ failoverPriority: ['version=v1', 'topology.istio.io/network=n2'] }));
  assert.deepEqual(byPriority(groups(proxy, catalog, pinned)), [
    ['10.0.2.4'],
    ['10.0.2.1', '10.0.2.2'],
    ['10.0.2.3'],
  ]);
  // With failover too, the locality rank refines each label rank.
  const both = configWith(
    lb({ failoverPriority: ['topology.istio.io/network'], failover: [{ from: 'r1', to: 'r2' }] }),
  );
  assert.deepEqual(byPriority(groups(proxy, catalog, both)), [
    ['10.0.2.1'],
    ['10.0.2.2'],
    ['10.0.2.3', '10.0.2.4'],
  ]);
  // The proxy's own labels count too (LABELS metadata).
  const labelled = grpcProxy(loc('r1', 'z9'), { LABELS: { version: 'v2' } });
  const byVersion = configWith(lb({ failoverPriority: ['version'] }));
  assert.deepEqual(byPriority(groups(labelled, catalog, byVersion)), [
    ['10.0.2.3'],
    ['10.0.2.1', '10.0.2.2', '10.0.2.4'],
  ]);
});

test('distribute: each locality’s share of the percentages, split by weight under a wildcard; others left out', () => {
  const catalog = catalogOf([
    at('10.0.3.1', loc('us-east', 'a')),
    at('10.0.3.2', loc('us-east', 'b'), { weight: 3 }),
    at('10.0.3.3', loc('us-west', 'a')),
    at('10.0.3.4', loc('eu', 'a')),
  ]);
  const config = configWith(
    lb(
      {
        distribute: [
          { from: 'us-east/*', to: { 'us-east/*': 80, 'us-west/*': 20 } },
          { from: 'us-west', to: { 'us-west/a': 100 } },
        ],
      },
      false,
    ),
  );
  const east = groups(grpcProxy(loc('us-east', 'b')), catalog, config);
  assert.deepEqual(
    east.map((g) => [g.addresses[0], g.priority, g.weight]),
    [
      ['10.0.3.1', 0, 20], // 80 × 1/4
      ['10.0.3.2', 0, 60], // 80 × 3/4
      ['10.0.3.3', 0, 20],
    ],
    'no outlier detection needed; eu is named by no `to`, so it gets nothing',
  );
  assert.deepEqual(
    groups(grpcProxy(loc('us-west', 'a')), catalog, config).map((g) => [g.addresses[0], g.weight]),
    [['10.0.3.3', 100]],
  );
  // A proxy no `from` matches keeps the plain weights.
  assert.deepEqual(
    groups(grpcProxy(loc('eu', 'a')), catalog, config).map((g) => g.weight),
    [1, 1, 3, 1],
  );
});

test('the proxy’s locality: LABELS topology keys over node.locality, then istio-locality; NETWORK', () => {
  const node = (metadata: Record<string, unknown>): NodeInfo => ({
    id: 'n',
    user_agent_name: 'gRPC Node',
    metadata,
    locality: { region: 'node-r', zone: 'node-z', sub_zone: 'node-s' },
  });
  assert.deepEqual(proxyFromNode(node({})).locality, loc('node-r', 'node-z', 'node-s'));
  assert.deepEqual(
    proxyFromNode(
      node({ LABELS: { 'topology.kubernetes.io/region': 'lr', 'topology.istio.io/subzone': 'ls' } }),
    ).locality,
    loc('lr', '', 'ls'),
  );
  assert.deepEqual(
    proxyFromNode(node({ LABELS: { 'istio-locality': 'a.b.c' } })).locality,
    loc('a', 'b', 'c'),
  );
  assert.deepEqual(proxyFromNode(node({ LABELS: { 'istio-locality': 'a/b' } })).locality, loc('a', 'b'));
  assert.equal(proxyFromNode(node({ NETWORK: 'vpc-1' })).network, 'vpc-1');
  assert.throws(() => proxyFromNode(node({ NETWORK: 7 })), /NETWORK must be a string/);
});

test('EDS per locality view: one encoded assignment per distinct view, shared when the rule ignores locality', () => {
  const catalog = catalogOf([at('10.0.4.1', loc('r1', 'z1')), at('10.0.4.2', loc('r2', 'z1'))]);
  const a1 = grpcProxy(loc('r1', 'z1'), { LABELS: { app: 'a' } });
  const a2 = grpcProxy(loc('r1', 'z1'), { LABELS: { app: 'b' } });
  const b = grpcProxy(loc('r2', 'z1'), { LABELS: { app: 'a' } });
  assert.notEqual(grpcEndpointGenerator.viewKey(a1), grpcEndpointGenerator.viewKey(b), 'keyed by locality');
  const resources = (config: MeshConfig) => {
    let view = servingView({ catalog, config });
    const cache = new ResourceCache((proxy) => ({
      ...(view = servingView({ catalog, config }, view)),
      proxy,
    }));
    return [a1, a2, b].map((p) => cache.get(grpcEndpointGenerator, p, NAME));
  };
  const [failA1, failA2, failB] = resources(configWith({ outlierDetection: OUTLIER }));
  assert.equal(failA1, failA2, 'same locality, other labels: built once, the same bytes');
  assert.notEqual(failA1?.version, failB?.version, 'another locality: its own priorities');
  const [plainA1, plainA2, plainB] = resources(configWith(undefined));
  assert.ok(
    plainA1 === plainA2 && plainA2 === plainB,
    'no locality settings: one assignment for every locality',
  );
  // Envoy's EDS uses the same builder and key.
  const envoyEds = envoyGenerators().find((g) => g.typeUrl === ENDPOINT) ?? assert.fail();
  for (const p of [a1, a2, b]) assert.equal(envoyEds.viewKey(p), grpcEndpointGenerator.viewKey(p));
});

test('Envoy clusters: locality-weighted balancing for distribute and explicit failover in effect (EDS only)', () => {
  const catalog = buildCatalog(
    [
      service(HOST, [servicePort('grpc', 7070)]),
      service('dns.mesh.internal', [servicePort('http', 80, 'HTTP')], { resolution: 'DNS' }),
    ],
    new Map([[HOST, [at('10.0.5.1', loc('r1'))]]]),
  );
  const cds = envoyGenerators().find((g) => g.typeUrl === CLUSTER) ?? assert.fail();
  const proxy = proxyFromNode({ id: 'sidecar~10.9.9.9~s~default.svc', user_agent_name: 'envoy' });
  const weighted = (policy: TrafficPolicy | undefined, host = HOST, port = 7070): unknown => {
    const config = configWith(policy);
    const rule = config.destinationRules[0];
    const cfg = rule ? { ...config, destinationRules: [{ ...rule, spec: { ...rule.spec, host } }] } : config;
    const r = cds.build(generateContext({ proxy, catalog, config: cfg }), `outbound|${port}||${host}`);
    const c = decodeAny(CLUSTER, r?.value ?? assert.fail()) as { common_lb_config?: Record<string, unknown> };
    return c.common_lb_config?.locality_weighted_lb_config;
  };
  assert.deepEqual(weighted(lb({ distribute: [{ from: '*', to: { '*': 100 } }] }, false)), {});
  assert.deepEqual(weighted(lb({ failover: [{ from: 'r1', to: 'r2' }] })), {});
  assert.deepEqual(weighted(lb({ failoverPriority: ['topology.istio.io/network'] })), {});
  assert.equal(weighted(lb({ failover: [{ from: 'r1', to: 'r2' }] }, false)), undefined, 'not in effect');
  assert.equal(weighted({ outlierDetection: OUTLIER }), undefined, 'default failover: as Istio, not set');
  assert.equal(
    weighted(lb({ distribute: [{ from: '*', to: { '*': 100 } }], enabled: false }, false)),
    undefined,
  );
  assert.equal(
    weighted(lb({ distribute: [{ from: '*', to: { '*': 100 } }] }, false), 'dns.mesh.internal', 80),
    undefined,
    'a DNS cluster’s one unweighted locality would get nothing',
  );
});

test('configz: failover without outlier detection is listed (merged levels count); gRPC’s reachability-only failover too', () => {
  const limits = (spec: Omit<DestinationRuleResource['spec'], 'host'>) => {
    const config = configWith(undefined);
    const rule: DestinationRuleResource = {
      kind: 'DestinationRule',
      apiVersion: 'networking.istio.io/v1',
      name: 'echo',
      namespace: 'default',
      labels: {},
      annotations: {},
      spec: { host: HOST, ...spec },
      file: 'dr.yaml',
      line: 1,
    };
    return trafficLimitations({ ...config, destinationRules: [rule] })
      .filter((l) => l.field.includes('localityLbSetting'))
      .map((l) => `${l.field} ${l.clients.join('+')}`);
  };
  const failover = { localityLbSetting: { failover: [{ from: 'a', to: 'b' }] } };
  assert.deepEqual(limits({ trafficPolicy: { loadBalancer: failover } }), [
    'spec.trafficPolicy.loadBalancer.localityLbSetting envoy+grpc',
  ]);
  assert.deepEqual(limits({ trafficPolicy: { loadBalancer: failover, outlierDetection: OUTLIER } }), [
    'spec.trafficPolicy.loadBalancer.localityLbSetting grpc',
  ]);
  // The subset inherits the rule's outlier detection: no warning for it.
  assert.deepEqual(
    limits({
      trafficPolicy: { outlierDetection: OUTLIER },
      subsets: [{ name: 'v1', labels: { v: '1' }, trafficPolicy: { loadBalancer: failover } }],
    }),
    ['spec.subsets[0].trafficPolicy.loadBalancer.localityLbSetting grpc'],
  );
  // Outlier detection on one port only: the warning stands for the others.
  assert.deepEqual(
    limits({
      trafficPolicy: {
        loadBalancer: failover,
        portLevelSettings: [{ port: { number: 7070 }, outlierDetection: OUTLIER }],
      },
    }),
    [
      'spec.trafficPolicy.loadBalancer.localityLbSetting grpc',
      'spec.trafficPolicy.loadBalancer.localityLbSetting envoy+grpc',
    ],
  );
  assert.deepEqual(
    limits({
      trafficPolicy: {
        loadBalancer: { localityLbSetting: { enabled: false, ...failover.localityLbSetting } },
      },
    }),
    [],
  );
  assert.deepEqual(
    limits({
      trafficPolicy: {
        loadBalancer: { localityLbSetting: { distribute: [{ from: '*', to: { '*': 100 } }] } },
      },
    }),
    [],
  );
});

test('the locality plan is per client namespace: a rule in the client’s namespace applies to it only, in one shared view', () => {
  const catalog = catalogOf([at('10.0.5.1', loc('r1', 'z1')), at('10.0.5.2', loc('r2', 'z1'))]);
  const teamRule = {
    ...(configWith(lb({}, true)).destinationRules[0] ?? assert.fail()),
    namespace: 'team-a',
  };
  const config: MeshConfig = { ...configWith(undefined), destinationRules: [teamRule] };
  const inNamespace = (namespace: string): Proxy =>
    proxyFromNode({
      id: `client-${namespace}`,
      user_agent_name: 'gRPC Node',
      metadata: { NAMESPACE: namespace },
      locality: { region: 'r1', zone: 'z1', sub_zone: '' },
    });
  // One view, as the server shares it: the second namespace must not reuse the first one's plan.
  const view = servingView({ catalog, config });
  const prioritiesOf = (proxy: Proxy): number[] => {
    const r = grpcEndpointGenerator.build({ ...view, proxy }, NAME);
    const cla = decodeAny(ENDPOINT, r?.value ?? assert.fail('no assignment')) as {
      endpoints?: { priority?: number }[];
    };
    return (cla.endpoints ?? []).map((g) => g.priority ?? 0);
  };
  assert.deepEqual(prioritiesOf(inNamespace('team-a')), [0, 1], 'team-a’s own rule: failover priorities');
  assert.deepEqual(prioritiesOf(inNamespace('team-b')), [0, 0], 'team-b sees no rule: one priority');
  assert.deepEqual(prioritiesOf(inNamespace('team-a')), [0, 1]);
});
