// Which VirtualService and DestinationRule apply to a host, from where: short names, wildcards,
// exportTo, gateway binding, namespace tiers; and subset clusters' endpoints in EDS.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import type {
  DestinationRuleResource,
  DestinationRuleSpec,
  VirtualServiceResource,
  VirtualServiceSpec,
} from '../../../mesh/types.js';
import { buildCatalog } from '../../../model/catalog.js';
import { buildLoadAssignment } from '../../../xds/generators/endpoints.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { bestMatch, hostMatches, resolveHost } from '../../../mesh/hosts.js';
import { MeshIndex } from '../../../mesh/mesh-index.js';
import { visibleTo } from '../../../mesh/visibility.js';
import { ENDPOINT } from '../../../xds/proto/type-urls.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

function dr(name: string, namespace: string, spec: DestinationRuleSpec): DestinationRuleResource {
  return envelope('DestinationRule', name, namespace, spec);
}
function vs(name: string, namespace: string, spec: VirtualServiceSpec): VirtualServiceResource {
  return envelope('VirtualService', name, namespace, spec);
}
function envelope<K extends string, T>(kind: K, name: string, namespace: string, spec: T) {
  const r = { kind, apiVersion: 'networking.istio.io/v1', name, namespace, labels: {}, annotations: {} };
  return { ...r, spec, file: `${name}.yaml`, line: 1 };
}
function mesh(parts: Partial<MeshConfig>): MeshConfig {
  return { ...EMPTY_MESH_CONFIG, generation: 1, ...parts };
}

test('short names resolve in the resource namespace; FQDNs and * stay as written', () => {
  assert.equal(resolveHost('reviews', 'shop'), 'reviews.shop.svc.cluster.local');
  assert.equal(resolveHost('echo.mesh.internal', 'shop'), 'echo.mesh.internal');
  assert.equal(resolveHost('*', 'shop'), '*');
  assert.equal(resolveHost('*.example.com', 'shop'), '*.example.com');
});

test('wildcards match by suffix, and the most specific pattern wins', () => {
  assert.ok(hostMatches('*.example.com', 'a.example.com'));
  assert.ok(!hostMatches('*.example.com', 'example.com'));
  assert.ok(hostMatches('*', 'anything'));
  assert.equal(
    bestMatch(['*', '*.example.com', '*.a.example.com'], 'x.a.example.com')?.pattern,
    '*.a.example.com',
  );
  assert.equal(bestMatch(['*.example.com', 'a.example.com'], 'a.example.com')?.pattern, 'a.example.com');
  assert.equal(bestMatch(['*.example.org'], 'a.example.com'), undefined);
});

test('exportTo: absent and * are everyone, . the own namespace, ~ nobody, else by name', () => {
  assert.ok(visibleTo(undefined, 'a', 'b'));
  assert.ok(visibleTo(['*'], 'a', 'b'));
  assert.ok(visibleTo(['.'], 'a', 'a'));
  assert.ok(!visibleTo(['.'], 'a', 'b'));
  assert.ok(!visibleTo(['~'], 'a', 'a'));
  assert.ok(visibleTo(['b'], 'a', 'b'));
  assert.ok(!visibleTo(['c'], 'a', 'b'));
});

test('DestinationRule lookup: proxy namespace, then the service namespace, then the root; most specific host', () => {
  const config = mesh({
    destinationRules: [
      dr('root', 'istio-system', { host: '*.mesh.internal' }),
      dr('svc-wide', 'payments', { host: '*.mesh.internal' }),
      dr('svc-exact', 'payments', { host: 'pay.mesh.internal' }),
      dr('hidden', 'payments', { host: 'pay.mesh.internal', exportTo: ['.'] }),
      dr('client', 'web', { host: '*.internal' }),
    ],
  });
  const rules = new MeshIndex(config).destinationRules;
  assert.equal(rules.lookup('pay.mesh.internal', 'web', 'payments')?.name, 'client');
  assert.equal(rules.lookup('pay.mesh.internal', 'shop', 'payments')?.name, 'svc-exact');
  assert.equal(rules.lookup('pay.mesh.internal', 'payments', 'payments')?.name, 'svc-exact');
  assert.equal(rules.lookup('other.mesh.internal', 'shop', 'default')?.name, 'root');
  assert.equal(rules.lookup('other.example.com', 'shop', 'default'), undefined);
  // A short host resolves in the rule's namespace.
  const short = new MeshIndex(mesh({ destinationRules: [dr('short', 'shop', { host: 'reviews' })] }))
    .destinationRules;
  assert.equal(short.lookup('reviews.shop.svc.cluster.local', 'shop')?.name, 'short');
  assert.equal(short.lookup('reviews.other.svc.cluster.local', 'shop'), undefined);
});

test('VirtualService lookup: bound gateway, visibility, most specific host, then config order', () => {
  const config = mesh({
    virtualServices: [
      vs('wide', 'default', { hosts: ['*.mesh.internal'] }),
      vs('exact', 'default', { hosts: ['echo.mesh.internal'] }),
      vs('exact-later', 'default', { hosts: ['echo.mesh.internal'] }),
      vs('edge', 'default', { hosts: ['echo.mesh.internal'], gateways: ['ingress'] }),
      vs('private', 'team', { hosts: ['db.mesh.internal'], exportTo: ['.'] }),
    ],
  });
  const virtualServices = new MeshIndex(config).virtualServices;
  assert.equal(virtualServices.lookup('echo.mesh.internal', 'default')?.name, 'exact');
  assert.equal(virtualServices.lookup('shop.mesh.internal', 'default')?.name, 'wide');
  assert.equal(virtualServices.lookup('echo.mesh.internal', 'default', 'default/ingress')?.name, 'edge');
  assert.equal(virtualServices.lookup('db.mesh.internal', 'team')?.name, 'private');
  assert.equal(virtualServices.lookup('db.mesh.internal', 'default')?.name, 'wide');
});

test('EDS for a subset cluster holds the endpoints with the subset labels; an unknown subset has none', () => {
  const HOST = 'echo.mesh.internal';
  const catalog = buildCatalog(
    [service(HOST, [servicePort('grpc', 7070)])],
    new Map([
      [
        HOST,
        [
          endpoint('10.0.0.1', { grpc: 7070 }, { labels: { version: 'v1' } }),
          endpoint('10.0.0.2', { grpc: 7070 }, { labels: { version: 'v2', tier: 'canary' } }),
          endpoint('10.0.0.3', { grpc: 7070 }, { labels: { version: 'v2' } }),
        ],
      ],
    ]),
  );
  const config = mesh({
    destinationRules: [
      dr('echo', 'default', {
        host: HOST,
        subsets: [
          { name: 'v2', labels: { version: 'v2' } },
          { name: 'canary', labels: { version: 'v2', tier: 'canary' } },
        ],
      }),
    ],
  });
  const proxy = proxyFromNode({ id: 'client', user_agent_name: 'gRPC Node' });
  const addresses = (name: string): string[] | undefined => {
    const r = buildLoadAssignment(generateContext({ proxy, catalog, config }), name);
    if (!r) return undefined;
    const cla = decodeAny(ENDPOINT, r.value) as {
      endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string } } } }[] }[];
    };
    return cla.endpoints.flatMap((l) => l.lb_endpoints.map((e) => e.endpoint.address.socket_address.address));
  };
  assert.deepEqual(addresses(`outbound|7070||${HOST}`), ['10.0.0.1', '10.0.0.2', '10.0.0.3']);
  assert.deepEqual(addresses(`outbound|7070|v2|${HOST}`), ['10.0.0.2', '10.0.0.3']);
  assert.deepEqual(addresses(`outbound|7070|canary|${HOST}`), ['10.0.0.2']);
  assert.equal(addresses(`outbound|7070|v3|${HOST}`), undefined);
});
