// Consul health entries → Service and Endpoints: every row of the conversion table in
// docs/registry-consul.md.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HealthCheck, HealthEntry } from '../../../adapters/consul/api.js';
import {
  convertService,
  endpointHealth,
  instanceStatus,
  labelsOf,
  type ConversionOptions,
} from '../../../adapters/consul/conversion.js';

const OPTIONS: ConversionOptions = {
  domain: 'service.consul',
  warningHealthy: true,
  registry: 'consul',
  datacenter: 'dc-flag',
};

interface EntrySpec {
  node?: string;
  nodeAddress?: string;
  datacenter?: string;
  nodeMeta?: Record<string, string>;
  id?: string;
  name?: string;
  address?: string;
  port?: number;
  tags?: string[];
  meta?: Record<string, string>;
  weights?: { Passing: number; Warning: number };
  checks?: HealthCheck[];
}

function entry(spec: EntrySpec = {}): HealthEntry {
  const id = spec.id ?? 'web-1';
  return {
    Node: {
      Node: spec.node ?? 'node-1',
      Address: spec.nodeAddress ?? '10.0.0.1',
      Datacenter: spec.datacenter ?? 'dc1',
      Meta: spec.nodeMeta ?? {},
    },
    Service: {
      ID: id,
      Service: spec.name ?? 'web',
      Tags: spec.tags ?? [],
      Address: spec.address ?? '',
      Meta: spec.meta ?? {},
      Port: spec.port ?? 8080,
      Weights: spec.weights ?? { Passing: 1, Warning: 1 },
    },
    Checks: spec.checks ?? [
      { CheckID: 'serfHealth', Status: 'passing', ServiceID: '' },
      { CheckID: `service:${id}`, Status: 'passing', ServiceID: id },
    ],
  };
}

function check(CheckID: string, Status: HealthCheck['Status'], ServiceID = 'web-1'): HealthCheck {
  return { CheckID, Status, ServiceID };
}

describe('service', () => {
  test('host is NAME.domain (lowercased), namespace default, STATIC, mesh-internal, registry consul', () => {
    const { service } = convertService('Web', [entry({ name: 'Web' })], OPTIONS);
    assert.deepEqual(service, {
      hostname: 'web.service.consul',
      namespace: 'default',
      ports: [{ name: 'tcp-8080', number: 8080, protocol: 'TCP' }],
      addresses: [],
      resolution: 'STATIC',
      labels: {},
      registry: 'consul',
      location: 'MESH_INTERNAL',
    });
    assert.equal(
      convertService('web', [entry()], { ...OPTIONS, domain: 'consul.example' }).service?.hostname,
      'web.consul.example',
    );
  });

  test('a name that is not a DNS label is not served, with a note', () => {
    const out = convertService('web.v2', [entry({ name: 'web.v2' })], OPTIONS);
    assert.equal(out.service, undefined);
    assert.match(out.notes.join(), /not a valid DNS label/);
  });

  test('namespace from the `namespace` meta (the most common value among instances)', () => {
    const out = convertService(
      'web',
      [
        entry({ id: 'a', meta: { namespace: 'shop' } }),
        entry({ id: 'b', nodeAddress: '10.0.0.2', meta: { namespace: 'shop' } }),
        entry({ id: 'c', nodeAddress: '10.0.0.3', meta: { namespace: 'other' } }),
      ],
      OPTIONS,
    );
    assert.equal(out.service?.namespace, 'shop');
  });

  test('protocol from ServiceMeta.protocol, case-insensitive; empty is TCP; unknown is TCP with a note', () => {
    const proto = (meta: Record<string, string>) =>
      convertService('web', [entry({ meta })], OPTIONS).service?.ports[0]?.protocol;
    assert.equal(proto({ protocol: 'grpc' }), 'GRPC');
    assert.equal(proto({ protocol: 'HTTP' }), 'HTTP');
    assert.equal(proto({ protocol: 'http2' }), 'HTTP2');
    assert.equal(proto({ protocol: 'tcp' }), 'TCP');
    assert.equal(proto({}), 'TCP');
    const unknown = convertService('web', [entry({ meta: { protocol: 'carrier-pigeon' } })], OPTIONS);
    assert.equal(unknown.service?.ports[0]?.protocol, 'TCP');
    assert.match(unknown.notes.join(), /unknown protocol "carrier-pigeon"/);
  });

  test('mixed ports: one service port per distinct ServicePort, every instance serves each on its own port', () => {
    const out = convertService(
      'web',
      [
        entry({ id: 'a', nodeAddress: '10.0.0.1', port: 9090, meta: { protocol: 'grpc' } }),
        entry({ id: 'b', nodeAddress: '10.0.0.2', port: 8080, meta: { protocol: 'grpc' } }),
        entry({ id: 'c', nodeAddress: '10.0.0.3', port: 8080, meta: { protocol: 'grpc' } }),
      ],
      OPTIONS,
    );
    assert.deepEqual(out.service?.ports, [
      { name: 'grpc-8080', number: 8080, protocol: 'GRPC' },
      { name: 'grpc-9090', number: 9090, protocol: 'GRPC' },
    ]);
    assert.deepEqual(
      out.endpoints.map((e) => [e.address, e.ports]),
      [
        ['10.0.0.1', { 'grpc-8080': 9090, 'grpc-9090': 9090 }],
        ['10.0.0.2', { 'grpc-8080': 8080, 'grpc-9090': 8080 }],
        ['10.0.0.3', { 'grpc-8080': 8080, 'grpc-9090': 8080 }],
      ],
    );
  });

  test("a port's protocol is its instances' most common one; a disagreement is noted", () => {
    const out = convertService(
      'web',
      [
        entry({ id: 'a', nodeAddress: '10.0.0.1', meta: { protocol: 'http' } }),
        entry({ id: 'b', nodeAddress: '10.0.0.2', meta: { protocol: 'grpc' } }),
        entry({ id: 'c', nodeAddress: '10.0.0.3', meta: { protocol: 'grpc' } }),
      ],
      OPTIONS,
    );
    assert.equal(out.service?.ports[0]?.protocol, 'GRPC');
    assert.match(out.notes.join(), /port 8080: instances declare GRPC, HTTP; using GRPC/);
  });

  test('no usable instance: no service', () => {
    const out = convertService('web', [entry({ port: 0 })], OPTIONS);
    assert.equal(out.service, undefined);
    assert.deepEqual(out.endpoints, []);
    assert.match(out.notes.join(), /no port/);
    assert.equal(convertService('web', [], OPTIONS).service, undefined);
  });
});

describe('endpoints', () => {
  test('address is ServiceAddress, falling back to the node Address', () => {
    const out = convertService(
      'web',
      [
        entry({ id: 'a', address: '192.168.1.5' }),
        entry({ id: 'b', node: 'node-2', nodeAddress: '10.0.0.2' }),
      ],
      OPTIONS,
    );
    assert.deepEqual(
      out.endpoints.map((e) => e.address),
      ['192.168.1.5', '10.0.0.2'],
    );
  });

  test('an address that is not an IP is skipped with a note (STATIC endpoints need IPs)', () => {
    const out = convertService(
      'web',
      [entry({ id: 'a', address: 'web.example.com' }), entry({ id: 'b', nodeAddress: '10.0.0.2' })],
      OPTIONS,
    );
    assert.deepEqual(
      out.endpoints.map((e) => e.address),
      ['10.0.0.2'],
    );
    assert.match(out.notes.join(), /node-1\/a: address "web.example.com" is not an IP address/);
  });

  test('IPv6 addresses are kept', () => {
    const out = convertService('web', [entry({ address: 'fd00::5' })], OPTIONS);
    assert.equal(out.endpoints[0]?.address, 'fd00::5');
  });

  test('two instances at one address:port become one endpoint: the healthier, with a note', () => {
    const out = convertService(
      'web',
      [
        entry({ id: 'a', checks: [check('service:a', 'critical', 'a')] }),
        entry({ id: 'b', checks: [check('service:b', 'passing', 'b')] }),
      ],
      OPTIONS,
    );
    assert.equal(out.endpoints.length, 1);
    assert.equal(out.endpoints[0]?.health, 'HEALTHY');
    assert.match(out.notes.join(), /node-1\/a: same address and port as node-1\/b/);
  });

  test('labels from key=value and key|value tags and from meta (meta wins); a bare tag is key ""', () => {
    assert.deepEqual(
      labelsOf(['version=v2', 'team|payments', 'canary', '=x', 'a=b=c'], { team: 'checkout' }),
      {
        a: 'b=c',
        canary: '',
        team: 'checkout',
        version: 'v2',
      },
    );
    const out = convertService('web', [entry({ tags: ['version=v1'], meta: { protocol: 'grpc' } })], OPTIONS);
    assert.deepEqual(out.endpoints[0]?.labels, { protocol: 'grpc', version: 'v1' });
  });

  test('labels have a fixed key order, whatever the tag order', () => {
    const a = labelsOf(['b=1', 'a=2'], {});
    const b = labelsOf(['a=2', 'b=1'], {});
    assert.equal(JSON.stringify(a), JSON.stringify(b));
  });

  test('locality: region from the datacenter, zone and subzone from service meta, else node meta', () => {
    const out = convertService(
      'web',
      [
        entry({ id: 'a', meta: { zone: 'z1', subzone: 'rack4' } }),
        entry({ id: 'b', nodeAddress: '10.0.0.2', nodeMeta: { zone: 'z2' }, datacenter: 'dc2' }),
        entry({ id: 'c', nodeAddress: '10.0.0.3', datacenter: '' }),
      ],
      OPTIONS,
    );
    assert.deepEqual(
      out.endpoints.map((e) => e.locality),
      [
        { region: 'dc1', zone: 'z1', subzone: 'rack4' },
        { region: 'dc2', zone: 'z2', subzone: '' },
        { region: 'dc-flag', zone: '', subzone: '' },
      ],
    );
  });

  test('weight from Weights.Passing, or Weights.Warning for a warning instance; at least 1', () => {
    const weight = (status: HealthCheck['Status'], weights: { Passing: number; Warning: number }) =>
      convertService('web', [entry({ weights, checks: [check('service:web-1', status)] })], OPTIONS)
        .endpoints[0]?.weight;
    assert.equal(weight('passing', { Passing: 10, Warning: 3 }), 10);
    assert.equal(weight('warning', { Passing: 10, Warning: 3 }), 3);
    assert.equal(weight('passing', { Passing: 0, Warning: 0 }), 1);
  });

  test('service account from ServiceMeta.service_account, else the service name', () => {
    const out = convertService(
      'web',
      [
        entry({ id: 'a', meta: { service_account: 'payments' } }),
        entry({ id: 'b', nodeAddress: '10.0.0.2' }),
      ],
      OPTIONS,
    );
    assert.deepEqual(
      out.endpoints.map((e) => e.serviceAccount),
      ['payments', 'web'],
    );
  });

  test('network from the `network` meta', () => {
    const out = convertService('web', [entry({ meta: { network: 'vpc-2' } })], OPTIONS);
    assert.equal(out.endpoints[0]?.network, 'vpc-2');
  });

  test('endpoints come in a stable order (node, then service ID), whatever order Consul used', () => {
    const a = entry({ id: 'a', node: 'n2', nodeAddress: '10.0.0.2' });
    const b = entry({ id: 'b', node: 'n1', nodeAddress: '10.0.0.1' });
    const one = convertService('web', [a, b], OPTIONS);
    const two = convertService('web', [b, a], OPTIONS);
    assert.deepEqual(one, two);
    assert.deepEqual(
      one.endpoints.map((e) => e.address),
      ['10.0.0.1', '10.0.0.2'],
    );
  });
});

describe('health', () => {
  test("the worst of the service checks and the node checks; other services' checks are ignored", () => {
    assert.equal(instanceStatus('web-1', []), 'passing');
    assert.equal(instanceStatus('web-1', [check('serfHealth', 'critical', '')]), 'critical');
    assert.equal(
      instanceStatus('web-1', [check('service:web-1', 'warning'), check('serfHealth', 'passing', '')]),
      'warning',
    );
    assert.equal(instanceStatus('web-1', [check('service:other', 'critical', 'other')]), 'passing');
    assert.equal(instanceStatus('web-1', [check('_service_maintenance:web-1', 'critical')]), 'maintenance');
    assert.equal(instanceStatus('web-1', [check('_node_maintenance', 'critical', '')]), 'maintenance');
  });

  test('passing → HEALTHY, warning → HEALTHY (configurable), critical and maintenance → UNHEALTHY', () => {
    assert.equal(endpointHealth('passing', 1, true), 'HEALTHY');
    assert.equal(endpointHealth('warning', 1, true), 'HEALTHY');
    assert.equal(endpointHealth('warning', 1, false), 'UNHEALTHY');
    assert.equal(endpointHealth('warning', 0, true), 'UNHEALTHY', 'Weights.Warning 0 means no traffic');
    assert.equal(endpointHealth('critical', 1, true), 'UNHEALTHY');
    assert.equal(endpointHealth('maintenance', 1, true), 'UNHEALTHY');
  });

  test('unhealthy instances stay in view as UNHEALTHY endpoints, not dropped', () => {
    const out = convertService(
      'web',
      [
        entry({ id: 'a', checks: [check('service:a', 'critical', 'a')] }),
        entry({
          id: 'b',
          nodeAddress: '10.0.0.2',
          checks: [check('_service_maintenance:b', 'critical', 'b')],
        }),
        entry({ id: 'c', nodeAddress: '10.0.0.3', checks: [check('service:c', 'warning', 'c')] }),
      ],
      { ...OPTIONS, warningHealthy: false },
    );
    assert.deepEqual(
      out.endpoints.map((e) => e.health),
      ['UNHEALTHY', 'UNHEALTHY', 'UNHEALTHY'],
    );
    assert.ok(out.service);
  });
});
