// The EDS view key reads of a proxy only what the mesh's locality rules read (issue #22): nothing
// without DestinationRules or with rules that have neither subsets nor locality settings, the
// namespace with rules that have subsets, the locality for failover or distribute, only the
// failoverPriority labels for label-based failover. And whatever
// the key leaves out cannot change the assignment: for every proxy, the assignment served from the
// shared cache equals the one built for that proxy alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type { DestinationRuleResource, TrafficPolicy } from '../../../mesh/types.js';
import { buildCatalog } from '../../../model/catalog.js';
import type { Locality } from '../../../model/endpoint.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { grpcEndpointGenerator } from '../../../xds/generators/grpc/endpoint.js';
import { generateContext, servingView } from '../../../xds/generators/serving-view.js';
import { ENDPOINT } from '../../../xds/proto/type-urls.js';
import { proxyFromNode, type Proxy } from '../../../xds/proxy/proxy.js';
import { ResourceCache } from '../../../xds/server/resource-cache.js';
import { destinationRule } from '../../support/mesh-fixtures.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';

const HOST = 'echo.keys.internal';
const NAME = `outbound|7070||${HOST}`;
const OUTLIER = { consecutive5xxErrors: 3 };
const REGIONS = ['r1', 'r2', 'r3'];

const loc = (region: string, zone: string): Locality => ({ region, zone, subzone: '' });

const catalog = buildCatalog(
  [service(HOST, [servicePort('grpc', 7070)])],
  new Map([
    [
      HOST,
      REGIONS.flatMap((r, i) => [
        endpoint(
          `10.0.${i}.1`,
          { grpc: 7070 },
          { locality: loc(r, `${r}-a`), network: `${r}-net`, labels: { app: 'x' } },
        ),
        endpoint(
          `10.0.${i}.2`,
          { grpc: 7070 },
          { locality: loc(r, `${r}-b`), network: `${r}-net`, labels: { app: 'y' } },
        ),
      ]),
    ],
  ]),
);

/** 36 clients: 3 regions × 2 zones × 2 apps × 3 instances, each with a unique instance label. */
const proxies: Proxy[] = REGIONS.flatMap((region) =>
  ['a', 'b'].flatMap((zone) =>
    ['x', 'y'].flatMap((app) =>
      [1, 2, 3].map((n) =>
        proxyFromNode({
          id: `${region}-${zone}-${app}-${n}`,
          user_agent_name: 'gRPC Node',
          metadata: {
            NAMESPACE: 'default',
            NETWORK: `${region}-net`,
            LABELS: { app, instance: `${region}${zone}${app}${n}` },
          },
          locality: { region, zone: `${region}-${zone}` },
        }),
      ),
    ),
  ),
);

function configWith(policies: (TrafficPolicy | undefined)[]): MeshConfig {
  const rules = policies.map((trafficPolicy, i): DestinationRuleResource => ({
    kind: 'DestinationRule',
    apiVersion: 'networking.istio.io/v1',
    name: `rule-${i}`,
    namespace: 'default',
    labels: {},
    annotations: {},
    spec: {
      host: i === 0 ? HOST : `other-${i}.keys.internal`,
      ...(trafficPolicy && { trafficPolicy }),
      subsets: [{ name: 'v1', labels: { app: 'x' } }],
    },
    file: 'dr.yaml',
    line: 1,
  }));
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

/** Distinct EDS views of the 36 clients under `config`; checks each served assignment is the proxy's own. */
function views(config: MeshConfig): number {
  const view = servingView({ catalog, config });
  const cache = new ResourceCache((proxy) => ({ ...view, proxy }));
  for (const proxy of proxies) {
    const shared = cache.get(grpcEndpointGenerator, proxy, NAME);
    const own = grpcEndpointGenerator.build(generateContext({ proxy, catalog, config }), NAME);
    assert.equal(shared?.version, own?.version, `${proxy.id}: the shared assignment is its own`);
  }
  const envoyEds = envoyGenerators().find((g) => g.typeUrl === ENDPOINT) ?? assert.fail();
  for (const p of proxies) assert.equal(envoyEds.viewKey(p, view), grpcEndpointGenerator.viewKey(p, view));
  return new Set(proxies.map((p) => grpcEndpointGenerator.viewKey(p, view))).size;
}

const failover = (setting: object, outlier = true): TrafficPolicy => ({
  loadBalancer: { localityLbSetting: setting },
  ...(outlier && { outlierDetection: OUTLIER }),
});

test('no DestinationRule, or rules without locality settings: one EDS view for every client', () => {
  assert.equal(views(configWith([])), 1);
  assert.equal(views(configWith([{ loadBalancer: { simple: 'ROUND_ROBIN' } }, undefined])), 1);
  assert.equal(
    views(configWith([failover({ failover: [{ from: 'r1', to: 'r2' }] }, false)])),
    1,
    'no outlier detection: no failover',
  );
  assert.equal(views(configWith([failover({ enabled: false })])), 1, 'locality balancing switched off');
});

/** The 36 clients again, half of them in namespace `other` (which a rule exported to `.` is not seen from). */
const spread = proxies.map((p, i) => (i % 2 === 0 ? p : { ...p, namespace: 'other' }));

/** A rule for HOST in `default`, seen there only; `subsets` gives it subset v1. */
function ruleConfig(subsets: boolean): MeshConfig {
  const rule = destinationRule('echo', {
    host: HOST,
    exportTo: ['.'],
    trafficPolicy: { connectionPool: { http: { http2MaxRequests: 10 } } },
    ...(subsets && { subsets: [{ name: 'v1', labels: { app: 'x' } }] }),
  });
  return { ...configWith([]), destinationRules: [rule] };
}

/** The EDS view keys of the spread clients under `config`; each served assignment (of `names`) is the proxy's own. */
function spreadKeys(config: MeshConfig, names: readonly string[]): Set<string> {
  const view = servingView({ catalog, config });
  const cache = new ResourceCache((proxy) => ({ ...view, proxy }));
  for (const proxy of spread) {
    for (const name of names) {
      const shared = cache.get(grpcEndpointGenerator, proxy, name);
      const own = grpcEndpointGenerator.build(generateContext({ proxy, catalog, config }), name);
      assert.equal(shared?.version, own?.version, `${proxy.id} (${proxy.namespace}) ${name}: its own`);
    }
  }
  return new Set(spread.map((p) => grpcEndpointGenerator.viewKey(p, view)));
}

test('a rule without subsets or locality settings leaves every client in the view it had without rules', () => {
  // So the first such rule in a mesh moves no stream to a new view (which rebuilds what it holds).
  const before = spreadKeys(configWith([]), [NAME]);
  const after = spreadKeys(ruleConfig(false), [NAME, `outbound|7070|v1|${HOST}`]);
  assert.equal(after.size, 1);
  assert.deepEqual(after, before);
});

test('a rule with subsets: one EDS view per namespace, a subset served only where its rule is seen', () => {
  const subset = `outbound|7070|v1|${HOST}`;
  assert.equal(spreadKeys(ruleConfig(true), [NAME, subset]).size, 2);
  const view = servingView({ catalog, config: ruleConfig(true) });
  const cache = new ResourceCache((proxy) => ({ ...view, proxy }));
  const seen = spread[0] ?? assert.fail();
  const unseen = spread[1] ?? assert.fail();
  assert.ok(cache.get(grpcEndpointGenerator, seen, subset), 'default sees the rule and its subset');
  assert.equal(cache.get(grpcEndpointGenerator, unseen, subset), undefined, 'other does not');
});

test('failover or distribute: one EDS view per client locality, labels ignored', () => {
  assert.equal(
    views(configWith([{ outlierDetection: OUTLIER }])),
    6,
    'outlier detection alone prioritizes by locality',
  );
  assert.equal(views(configWith([failover({ failover: [{ from: 'r1', to: 'r2' }] })])), 6);
  assert.equal(
    views(
      configWith([
        {
          loadBalancer: {
            localityLbSetting: { distribute: [{ from: 'r1/*', to: { 'r1/*': 80, 'r2/*': 20 } }] },
          },
        },
      ]),
    ),
    6,
  );
  // A rule on another host still makes the whole mesh's key read the locality (an over-approximation).
  assert.equal(views(configWith([undefined, { outlierDetection: OUTLIER }])), 6);
  // Port- and subset-level settings count too.
  assert.equal(
    views(configWith([{ portLevelSettings: [{ port: { number: 7070 }, outlierDetection: OUTLIER }] }])),
    6,
  );
});

test('failoverPriority: one EDS view per value of the labels it names, nothing else', () => {
  assert.equal(
    views(configWith([failover({ failoverPriority: ['topology.istio.io/network'] })])),
    3,
    'per network',
  );
  assert.equal(views(configWith([failover({ failoverPriority: ['app'] })])), 2, 'per app, not per instance');
  assert.equal(
    views(configWith([failover({ failoverPriority: ['app=x'] })])),
    1,
    'a fixed value reads no label',
  );
  assert.equal(
    views(configWith([failover({ failoverPriority: ['app'], failover: [{ from: 'r1', to: 'r2' }] })])),
    12,
    'with failover too: locality × app',
  );
});

test('without a serving view, the key covers every rule: locality, network and labels', () => {
  assert.equal(new Set(proxies.map((p) => grpcEndpointGenerator.viewKey(p))).size, proxies.length);
});
