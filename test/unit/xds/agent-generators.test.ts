// What the control plane sends `portolan agent` on its own stream: the DNS name table (NDS) with
// auto-allocated addresses and Sidecar scoping, the WorkloadGroup registration (its probe); and the
// auto-allocated address as the captured listener of a DNS_AUTO_ALLOCATE Envoy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocateAddresses } from '../../../mesh/auto-addresses.js';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import type { SidecarResource, WorkloadGroupResource } from '../../../mesh/types.js';
import { buildCatalog } from '../../../model/catalog.js';
import type { Service } from '../../../model/service.js';
import { nameTableGenerator } from '../../../xds/generators/agent/name-table.js';
import { registrationGenerator } from '../../../xds/generators/agent/registration.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { GeneratorTable } from '../../../xds/generators/index.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { LISTENER } from '../../../xds/proto/type-urls.js';
import { proxyFromNode, type Proxy } from '../../../xds/proxy/proxy.js';
import { service, servicePort } from '../../support/model-fixtures.js';

const SERVICES: Service[] = [
  service('echo.vm.internal', [servicePort('grpc', 7070)], { addresses: ['10.77.0.9'] }),
  service('db.vm.internal', [servicePort('tcp', 5432, 'TCP')], { namespace: 'data' }),
  service('ext.example.com', [servicePort('https', 443, 'TLS')], { addresses: ['203.0.113.7/32'] }),
  service('passthrough.internal', [servicePort('tcp', 9000, 'TCP')], { resolution: 'NONE' }),
  service('*.wild.internal', [servicePort('http', 80, 'HTTP')], { resolution: 'NONE' }),
  service('reviews.shop.svc.cluster.local', [servicePort('http', 9080, 'HTTP')], {
    addresses: ['10.96.0.5'],
    registry: 'kubernetes',
    namespace: 'shop',
  }),
];

const agentNode = (namespace = 'shop'): Proxy =>
  proxyFromNode({
    id: 'agent/vm-1',
    user_agent_name: 'portolan-agent',
    metadata: { NAMESPACE: namespace, GENERATOR: 'grpc' },
  });

function table(config: MeshConfig = EMPTY_MESH_CONFIG, proxy = agentNode()): Record<string, unknown> {
  const ctx = generateContext({ proxy, catalog: buildCatalog(SERVICES, new Map()), config });
  const r = nameTableGenerator('grpc').build(ctx, 'name-table');
  assert.ok(r);
  return (decodeAny(r.typeUrl, r.value) as { table: Record<string, unknown> }).table;
}

test('allocation: a stable address per hostname from 240.240.0.0/16 and 2001:2::/48; collisions resolved in name order', () => {
  const one = allocateAddresses(SERVICES);
  assert.deepEqual(
    [...one.keys()],
    ['db.vm.internal'],
    'only services without an IP, not NONE, not wildcards',
  );
  const db = one.get('db.vm.internal');
  assert.match(db?.v4 ?? '', /^240\.240\.\d{1,3}\.\d{1,3}$/);
  assert.match(db?.v6 ?? '', /^2001:2::[0-9a-f]{1,4}$/);
  // The same name keeps its address whatever else comes and goes.
  const more = allocateAddresses([
    ...SERVICES,
    ...Array.from({ length: 500 }, (_, i) => service(`svc-${i}.internal`, [servicePort('tcp', 1, 'TCP')])),
  ]);
  assert.deepEqual(more.get('db.vm.internal'), db);
  assert.equal(new Set([...more.values()].map((a) => a.v4)).size, more.size, 'no two names share one');
});

test('the name table: own addresses, allocated ones, short forms for Kubernetes hosts; no NONE or wildcard', () => {
  const t = table();
  const db = allocateAddresses(SERVICES).get('db.vm.internal');
  assert.deepEqual(t, {
    'echo.vm.internal': { ips: ['10.77.0.9'], registry: 'mock' },
    'db.vm.internal': { ips: [db?.v4, db?.v6], registry: 'mock' },
    'ext.example.com': { ips: ['203.0.113.7'], registry: 'mock' },
    'reviews.shop.svc.cluster.local': {
      ips: ['10.96.0.5'],
      registry: 'kubernetes',
      shortname: 'reviews',
      namespace: 'shop',
    },
  });
});

test("the name table follows the Sidecar of the agent's namespace", () => {
  const sidecar: SidecarResource = {
    kind: 'Sidecar',
    apiVersion: 'networking.istio.io/v1',
    name: 'default',
    namespace: 'shop',
    labels: {},
    annotations: {},
    spec: { egress: [{ hosts: ['./*'] }] },
    file: 's.yaml',
    line: 1,
  };
  const config = { ...EMPTY_MESH_CONFIG, generation: 1, sidecars: [sidecar] };
  assert.deepEqual(Object.keys(table(config)), ['reviews.shop.svc.cluster.local']);
  assert.equal(Object.keys(table(config, agentNode('other'))).length, 4, 'another namespace is not scoped');
});

test('the registration resource carries the group probe; an unknown group has none', () => {
  const group: WorkloadGroupResource = {
    kind: 'WorkloadGroup',
    apiVersion: 'networking.istio.io/v1',
    name: 'echo-vms',
    namespace: 'shop',
    labels: {},
    annotations: {},
    spec: { probe: { tcpSocket: { port: 7070 }, periodSeconds: 2 } },
    file: 'g.yaml',
    line: 1,
  };
  const ctx = generateContext({
    proxy: agentNode(),
    catalog: buildCatalog([], new Map()),
    config: { ...EMPTY_MESH_CONFIG, generation: 1, workloadGroups: [group] },
  });
  const g = registrationGenerator('grpc');
  const r = g.build(ctx, 'shop/echo-vms');
  assert.ok(r);
  const decoded = decodeAny(r.typeUrl, r.value) as { name: string; probe_json: string };
  assert.equal(decoded.name, 'shop/echo-vms');
  assert.deepEqual(JSON.parse(decoded.probe_json), { tcpSocket: { port: 7070 }, periodSeconds: 2 });
  assert.equal(g.build(ctx, 'shop/nope'), undefined);
  assert.equal(g.build(ctx, 'other/echo-vms'), undefined);
});

test('a DNS_AUTO_ALLOCATE Envoy captures a TCP service without an address on its allocated one', () => {
  const listeners = (metadata: Record<string, string>): string[] => {
    const proxy = proxyFromNode({
      id: 'sidecar~10.0.0.5~app-1~shop.svc',
      user_agent_name: 'envoy',
      metadata: { INTERCEPTION_MODE: 'REDIRECT', ...metadata },
    });
    const ctx = generateContext({
      proxy,
      catalog: buildCatalog(SERVICES, new Map()),
      config: EMPTY_MESH_CONFIG,
    });
    const g = new GeneratorTable(envoyGenerators(), false).find('envoy', LISTENER);
    assert.ok(g);
    return [...g.wildcardNames(ctx)].filter((n) => n.endsWith('_5432'));
  };
  const db = allocateAddresses(SERVICES).get('db.vm.internal')?.v4 ?? '';
  assert.deepEqual(listeners({}), ['0.0.0.0_5432']);
  assert.deepEqual(listeners({ DNS_AUTO_ALLOCATE: 'true' }), [`${db}_5432`]);
});
