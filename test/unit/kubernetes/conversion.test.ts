// Kubernetes Service + EndpointSlices → Portolan Service + Endpoints, case by case.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  convertService,
  health,
  locality,
  type ClusterLookup,
} from '../../../adapters/kubernetes/conversion.js';
import {
  objectKey,
  parseEndpointSlice,
  parseNode,
  parsePod,
  parseService,
  type KubeEndpointSlice,
} from '../../../adapters/kubernetes/api.js';
import type { KubeObject } from '../../support/kube-apiserver-standin.js';
import { kubeNode, kubePod, kubeService, kubeSlice } from './kube-fixtures.js';

function lookup(
  objects: { slices?: KubeObject[]; nodes?: KubeObject[]; pods?: KubeObject[] } = {},
): ClusterLookup {
  const slices = (objects.slices ?? []).map(parseEndpointSlice);
  const nodes = new Map((objects.nodes ?? []).map((n) => [parseNode(n).name, parseNode(n)]));
  const pods = new Map((objects.pods ?? []).map((p) => [objectKey(parsePod(p)), parsePod(p)]));
  return {
    clusterId: 'c1',
    domain: 'cluster.local',
    slicesOf: (ns, svc): KubeEndpointSlice[] =>
      slices.filter((s) => s.namespace === ns && s.serviceName === svc),
    node: (name) => nodes.get(name),
    pod: (ns, name) => pods.get(`${ns}/${name}`),
  };
}

test('a ClusterIP Service becomes SVC.NS.svc.DOMAIN with its VIP, ports and protocols', () => {
  const svc = parseService(
    kubeService(
      'shop',
      'cart',
      [
        { name: 'http-web', port: 80, targetPort: 8080 },
        { name: 'api', port: 9090, appProtocol: 'grpc' },
      ],
      { clusterIP: '10.96.1.1', clusterIPs: ['10.96.1.1', 'fd00::1'] },
      { app: 'cart' },
    ),
  );
  const { service, endpoints } = convertService(svc, { ...lookup(), domain: 'corp.example' }, 'kubernetes');
  assert.deepEqual(service, {
    hostname: 'cart.shop.svc.corp.example',
    namespace: 'shop',
    ports: [
      { name: 'http-web', number: 80, protocol: 'HTTP' },
      { name: 'api', number: 9090, protocol: 'GRPC' },
    ],
    addresses: ['10.96.1.1', 'fd00::1'],
    resolution: 'STATIC',
    labels: { app: 'cart' },
    registry: 'kubernetes',
    location: 'MESH_INTERNAL',
  });
  assert.deepEqual(endpoints, [], 'no slices, no endpoints');
});

test('endpoints come from EndpointSlices: target ports by port name, health, locality, pod service account', () => {
  const svc = parseService(
    kubeService('shop', 'cart', [
      { name: 'grpc', port: 7070 },
      { name: 'metrics', port: 9100 },
    ]),
  );
  const l = lookup({
    slices: [
      kubeSlice(
        'shop',
        'cart-a',
        'cart',
        [
          { name: 'grpc', port: 8080 },
          { name: 'metrics', port: 9101 },
        ],
        [
          { address: '10.0.0.1', nodeName: 'n1', pod: 'cart-1' },
          {
            address: '10.0.0.2',
            ready: false,
            serving: true,
            terminating: true,
            zone: 'eu-b',
            nodeName: 'n1',
          },
          { address: '10.0.0.3', ready: false, serving: false, terminating: true },
          { address: '10.0.0.4', ready: false },
        ],
      ),
      // another Service's slice in the same namespace is not ours
      kubeSlice('shop', 'other-a', 'other', [{ name: 'grpc', port: 1 }], [{ address: '10.9.9.9' }]),
    ],
    nodes: [kubeNode('n1', 'eu', 'eu-a', 'rack-7')],
    pods: [kubePod('shop', 'cart-1', 'cart-sa', { app: 'cart', version: 'v2' })],
  });
  const { endpoints, nodes, pods } = convertService(svc, l, 'kubernetes');
  assert.deepEqual(
    endpoints.map((e) => [e.address, e.ports, e.health, e.locality, e.serviceAccount]),
    [
      [
        '10.0.0.1',
        { grpc: 8080, metrics: 9101 },
        'HEALTHY',
        { region: 'eu', zone: 'eu-a', subzone: 'rack-7' },
        'cart-sa',
      ],
      [
        '10.0.0.2',
        { grpc: 8080, metrics: 9101 },
        'DRAINING',
        { region: 'eu', zone: 'eu-b', subzone: 'rack-7' },
        '',
      ],
      ['10.0.0.3', { grpc: 8080, metrics: 9101 }, 'UNHEALTHY', { region: '', zone: '', subzone: '' }, ''],
      ['10.0.0.4', { grpc: 8080, metrics: 9101 }, 'UNHEALTHY', { region: '', zone: '', subzone: '' }, ''],
    ],
  );
  assert.deepEqual(endpoints[0]?.labels, { app: 'cart', version: 'v2', 'topology.istio.io/cluster': 'c1' });
  assert.equal(endpoints[0]?.weight, 1);
  assert.deepEqual([...nodes], ['n1'], 'the nodes used are reported, so node changes reconvert');
  assert.deepEqual([...pods], ['shop/cart-1']);
});

test('health from EndpointSlice conditions, with the API defaults for absent ones', () => {
  const table: [{ ready: boolean; serving: boolean; terminating: boolean }, string][] = [
    [{ ready: true, serving: true, terminating: false }, 'HEALTHY'],
    [{ ready: false, serving: true, terminating: true }, 'DRAINING'],
    [{ ready: false, serving: false, terminating: true }, 'UNHEALTHY'],
    [{ ready: false, serving: true, terminating: false }, 'UNHEALTHY'],
    [{ ready: false, serving: false, terminating: false }, 'UNHEALTHY'],
  ];
  for (const [conditions, want] of table) assert.equal(health(conditions), want, JSON.stringify(conditions));
  // absent conditions: ready and serving default to true, terminating to false
  const slice = parseEndpointSlice(kubeSlice('ns', 's', 'svc', [{ port: 1 }], [{ address: '10.0.0.1' }]));
  assert.equal(health(slice.endpoints[0] ?? assert.fail()), 'HEALTHY');
});

test('locality: the slice zone first, the node for region, zone and subzone otherwise', () => {
  const node = parseNode(kubeNode('n', 'us', 'us-1', 'r2'));
  assert.deepEqual(locality({ zone: 'us-2' }, node), { region: 'us', zone: 'us-2', subzone: 'r2' });
  assert.deepEqual(locality({}, node), { region: 'us', zone: 'us-1', subzone: 'r2' });
  assert.deepEqual(locality({ zone: 'z' }, undefined), { region: '', zone: 'z', subzone: '' });
  const legacy = parseNode({
    metadata: {
      name: 'old',
      labels: {
        'failure-domain.beta.kubernetes.io/region': 'r',
        'failure-domain.beta.kubernetes.io/zone': 'z',
      },
    },
  });
  assert.deepEqual(locality({}, legacy), { region: 'r', zone: 'z', subzone: '' });
});

test('an unnamed single port is `port-N`; slices match it by the empty name', () => {
  const svc = parseService(kubeService('ns', 'web', [{ port: 80 }]));
  const l = lookup({
    slices: [kubeSlice('ns', 'web-1', 'web', [{ port: 8080 }], [{ address: '10.0.0.1' }])],
  });
  const { service, endpoints } = convertService(svc, l, 'kubernetes');
  assert.deepEqual(service.ports, [{ name: 'port-80', number: 80, protocol: 'TCP' }]);
  assert.deepEqual(endpoints[0]?.ports, { 'port-80': 8080 });
});

test('an address in two slices is one endpoint (first slice by name decides); slices serving no port are skipped', () => {
  const svc = parseService(
    kubeService('ns', 'web', [
      { name: 'http', port: 80 },
      { name: 'admin', port: 81 },
    ]),
  );
  const l = lookup({
    slices: [
      kubeSlice(
        'ns',
        'web-b',
        'web',
        [{ name: 'admin', port: 9001 }],
        [{ address: '10.0.0.1', ready: false }],
      ),
      kubeSlice('ns', 'web-a', 'web', [{ name: 'http', port: 9000 }], [{ address: '10.0.0.1' }]),
      kubeSlice('ns', 'web-c', 'web', [{ name: 'renamed', port: 1 }], [{ address: '10.0.0.9' }]),
      kubeSlice('ns', 'web-d', 'web', [{ name: 'http', port: 1 }], [{ address: 'host.example' }], 'FQDN'),
    ],
  });
  const { endpoints } = convertService(svc, l, 'kubernetes');
  assert.equal(endpoints.length, 1);
  assert.deepEqual(endpoints[0]?.ports, { http: 9000, admin: 9001 });
  assert.equal(endpoints[0]?.health, 'HEALTHY', 'web-a sorts first');
});

test('a dual-stack endpoint and a slice per address family give one endpoint per address', () => {
  const svc = parseService(kubeService('ns', 'web', [{ name: 'http', port: 80 }]));
  const l = lookup({
    slices: [
      kubeSlice('ns', 'web-v4', 'web', [{ name: 'http', port: 8080 }], [{ address: '10.0.0.1' }]),
      kubeSlice('ns', 'web-v6', 'web', [{ name: 'http', port: 8080 }], [{ address: 'fd00::1' }], 'IPv6'),
    ],
  });
  assert.deepEqual(
    convertService(svc, l, 'kubernetes').endpoints.map((e) => e.address),
    ['10.0.0.1', 'fd00::1'],
  );
});

test('a headless Service is STATIC without a VIP, its endpoints the pods', () => {
  const svc = parseService(kubeService('db', 'pg', [{ name: 'tcp-pg', port: 5432 }], { clusterIP: 'None' }));
  const l = lookup({
    slices: [kubeSlice('db', 'pg-1', 'pg', [{ name: 'tcp-pg', port: 5432 }], [{ address: '10.0.0.7' }])],
  });
  const { service, endpoints } = convertService(svc, l, 'kubernetes');
  assert.equal(service.resolution, 'STATIC');
  assert.deepEqual(service.addresses, []);
  assert.deepEqual(
    endpoints.map((e) => [e.address, e.ports]),
    [['10.0.0.7', { 'tcp-pg': 5432 }]],
  );
});

test('an ExternalName Service resolves by DNS to the external name, on every port, outside the mesh', () => {
  const svc = parseService(
    kubeService(
      'ext',
      'payments',
      [
        { name: 'https', port: 443 },
        { name: 'http', port: 80 },
      ],
      {
        type: 'ExternalName',
        externalName: 'api.payments.example',
        clusterIP: '',
      },
    ),
  );
  const { service, endpoints } = convertService(svc, lookup(), 'kubernetes');
  assert.equal(service.resolution, 'DNS');
  assert.equal(service.location, 'MESH_EXTERNAL');
  assert.deepEqual(service.addresses, []);
  assert.deepEqual(
    endpoints.map((e) => [e.address, e.ports, e.health]),
    [['api.payments.example', { https: 443, http: 80 }, 'HEALTHY']],
  );
});

test('malformed objects are refused with the field named', () => {
  assert.throws(() => parseService({ metadata: {} }), /metadata\.name/);
  assert.throws(
    () => parseService({ metadata: { name: 'x' }, spec: { ports: [{ port: 70000 }] } }),
    /spec\.ports\[0\]\.port/,
  );
  assert.throws(
    () =>
      parseEndpointSlice({ metadata: { name: 's' }, addressType: 'IPv4', endpoints: [{ addresses: [] }] }),
    /endpoints\[0\]\.addresses/,
  );
  assert.throws(
    () =>
      parseEndpointSlice({
        metadata: { name: 's' },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.0.0.1'], conditions: { ready: 'yes' } }],
      }),
    /conditions\.ready/,
  );
});
