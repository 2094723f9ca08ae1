import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadAll, workloadEntry } from './helpers.js';

const se = (name: string, spec: string, namespace = 'default') =>
  `apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\n  labels: {team: a}\nspec:\n${spec}`;

test('one Service per host, with every port, the defaults and the registry name', () => {
  const { conversion } = loadAll({
    's.yaml': se(
      'web',
      '  hosts: [a.example.internal, b.example.internal]\n  addresses: [10.96.0.10]\n  resolution: STATIC\n' +
        '  ports:\n    - {name: http, number: 80, protocol: HTTP}\n    - {name: tcp, number: 9000}\n' +
        '  endpoints: [{address: 10.0.0.1}]\n',
    ),
  });
  const { services, endpoints } = conversion.snapshot;
  assert.deepEqual([...services.keys()], ['a.example.internal', 'b.example.internal']);
  assert.deepEqual(services.get('b.example.internal'), {
    hostname: 'b.example.internal',
    namespace: 'default',
    ports: [
      { name: 'http', number: 80, protocol: 'HTTP' },
      { name: 'tcp', number: 9000, protocol: 'TCP' },
    ],
    addresses: ['10.96.0.10'],
    resolution: 'STATIC',
    labels: { team: 'a' },
    registry: 'config',
    location: 'MESH_EXTERNAL',
  });
  assert.deepEqual(endpoints.get('a.example.internal'), endpoints.get('b.example.internal'));
  assert.deepEqual(endpoints.get('a.example.internal'), [
    {
      address: '10.0.0.1',
      ports: { http: 80, tcp: 9000 },
      labels: {},
      locality: { region: '', zone: '', subzone: '' },
      weight: 1,
      health: 'HEALTHY',
      serviceAccount: '',
      network: '',
    },
  ]);
});

test('endpoint ports: the entry port by name, else targetPort, else the port number', () => {
  const { conversion } = loadAll({
    's.yaml': se(
      'svc',
      '  hosts: [svc.internal]\n  location: MESH_INTERNAL\n  resolution: STATIC\n' +
        '  ports:\n    - {name: a, number: 80, targetPort: 8080}\n    - {name: b, number: 81, targetPort: 8081}\n    - {name: c, number: 82}\n' +
        '  endpoints:\n    - address: 10.0.0.1\n      ports: {a: 9090}\n      locality: eu-west-1/eu-west-1a/rack7\n      weight: 5\n' +
        '      labels: {version: v2}\n      network: n1\n      serviceAccount: svc\n',
    ),
  });
  const [endpoint] = conversion.snapshot.endpoints.get('svc.internal') ?? [];
  assert.deepEqual(endpoint?.ports, { a: 9090, b: 8081, c: 82 });
  assert.deepEqual(endpoint?.locality, { region: 'eu-west-1', zone: 'eu-west-1a', subzone: 'rack7' });
  assert.equal(endpoint?.weight, 5);
  assert.deepEqual(endpoint?.labels, { version: 'v2' });
  assert.equal(endpoint?.network, 'n1');
  assert.equal(endpoint?.serviceAccount, 'svc');
  assert.equal(conversion.snapshot.services.get('svc.internal')?.location, 'MESH_INTERNAL');
});

test('workloadSelector selects WorkloadEntries of the same namespace by spec labels, in name order, with health', () => {
  const { conversion } = loadAll({
    'a-service.yaml': se(
      'echo',
      '  hosts: [echo.internal]\n  resolution: STATIC\n  ports: [{name: grpc, number: 50051, protocol: grpc, targetPort: 7000}]\n' +
        '  workloadSelector: {labels: {app: echo}}\n',
    ),
    'b-vms.yaml': [
      workloadEntry(
        'vm-b',
        '  address: 10.0.0.2\n  labels: {app: echo, version: v2}\n  ports: {grpc: 7002}\n  weight: 0\n',
      ),
      workloadEntry(
        'vm-a',
        '  address: 10.0.0.1\n  labels: {app: echo}\n',
        '  annotations:\n    portolan.io/health: draining\n',
      ),
      workloadEntry('other-app', '  address: 10.0.0.3\n  labels: {app: other}\n'),
      workloadEntry('other-ns', '  address: 10.0.0.4\n  labels: {app: echo}\n').replace(
        'namespace: default',
        'namespace: prod',
      ),
    ].join('---\n'),
  });
  const endpoints = conversion.snapshot.endpoints.get('echo.internal') ?? [];
  assert.deepEqual(
    endpoints.map((e) => [e.address, e.ports.grpc, e.health, e.weight]),
    [
      ['10.0.0.1', 7000, 'DRAINING', 1],
      ['10.0.0.2', 7002, 'HEALTHY', 1],
    ],
  );
  assert.deepEqual(conversion.warnings, []);
});

test('a selected WorkloadEntry with a DNS address under STATIC is skipped and reported', () => {
  const { conversion } = loadAll({
    's.yaml': se(
      'echo',
      '  hosts: [echo.internal]\n  resolution: STATIC\n  ports: [{name: p, number: 80}]\n  workloadSelector: {labels: {app: echo}}\n',
    ),
    'w.yaml': workloadEntry('vm', '  address: vm.example.com\n  labels: {app: echo}\n'),
  });
  assert.deepEqual(conversion.snapshot.endpoints.get('echo.internal'), []);
  assert.equal(conversion.warnings.length, 1);
  assert.match(
    conversion.warnings[0]?.message ?? '',
    /selected by ServiceEntry\/default\/echo but has a DNS name/,
  );
});

test('DNS without endpoints resolves each host itself; DNS_ROUND_ROBIN is DNS in the model', () => {
  const { conversion, merged } = loadAll({
    's.yaml': se(
      'ext',
      '  hosts: [api.example.com, www.example.com]\n  resolution: DNS_ROUND_ROBIN\n  ports: [{name: https, number: 443, protocol: TLS}]\n',
    ),
  });
  const { services, endpoints } = conversion.snapshot;
  assert.equal(services.get('api.example.com')?.resolution, 'DNS');
  assert.equal(
    merged.serviceEntries[0]?.spec.resolution,
    'DNS_ROUND_ROBIN',
    'configz still shows the original',
  );
  assert.deepEqual(
    endpoints.get('api.example.com')?.map((e) => [e.address, e.ports]),
    [['api.example.com', { https: 443 }]],
  );
  assert.deepEqual(
    endpoints.get('www.example.com')?.map((e) => e.address),
    ['www.example.com'],
  );
});

test('DNS with endpoints uses them; NONE has no endpoints', () => {
  const { conversion } = loadAll({
    'a.yaml': se(
      'dns',
      '  hosts: [db.internal]\n  resolution: DNS\n  ports: [{name: pg, number: 5432}]\n  endpoints: [{address: db-1.example.com}, {address: 10.0.0.7}]\n',
    ),
    'b.yaml': se(
      'none',
      '  hosts: ["*.googleapis.com"]\n  ports: [{name: https, number: 443, protocol: TLS}]\n',
    ),
  });
  assert.deepEqual(
    conversion.snapshot.endpoints.get('db.internal')?.map((e) => e.address),
    ['db-1.example.com', '10.0.0.7'],
  );
  assert.equal(conversion.snapshot.services.get('*.googleapis.com')?.resolution, 'NONE');
  assert.deepEqual(conversion.snapshot.endpoints.get('*.googleapis.com'), []);
});

test('the same host twice: the first by file path wins, the other is a conflict', () => {
  const { conversion } = loadAll({
    'b.yaml': se(
      'second',
      '  hosts: [dup.internal]\n  resolution: STATIC\n  ports: [{name: p, number: 81}]\n  endpoints: [{address: 10.0.0.2}]\n',
    ),
    'a.yaml': se(
      'first',
      '  hosts: [dup.internal, only-a.internal]\n  resolution: STATIC\n  ports: [{name: p, number: 80}]\n  endpoints: [{address: 10.0.0.1}]\n',
    ),
  });
  assert.equal(conversion.snapshot.services.get('dup.internal')?.ports[0]?.number, 80);
  assert.deepEqual(
    conversion.snapshot.endpoints.get('dup.internal')?.map((e) => e.address),
    ['10.0.0.1'],
  );
  assert.deepEqual(conversion.conflicts, [
    {
      type: 'duplicate-host',
      subject: 'dup.internal',
      kept: { resource: 'ServiceEntry/default/first', file: 'a.yaml', line: 1 },
      ignored: { resource: 'ServiceEntry/default/second', file: 'b.yaml', line: 1 },
    },
  ]);
});

test('the same resource identity twice: the first by file path wins', () => {
  const { merged, conversion } = loadAll({
    'z.yaml': workloadEntry('vm', '  address: 10.0.0.9\n'),
    'dir/a.yaml': workloadEntry('vm', '  address: 10.0.0.1\n'),
    'dir/b.yaml': workloadEntry('vm', '  address: 10.0.0.1\n').replace(
      'namespace: default',
      'namespace: other',
    ),
  });
  assert.deepEqual(
    merged.workloadEntries.map((w) => [w.namespace, w.spec.address, w.file]),
    [
      ['default', '10.0.0.1', 'dir/a.yaml'],
      ['other', '10.0.0.1', 'dir/b.yaml'],
    ],
  );
  assert.deepEqual(merged.conflicts, [
    {
      type: 'duplicate-resource',
      subject: 'WorkloadEntry/default/vm',
      kept: { resource: 'WorkloadEntry/default/vm', file: 'dir/a.yaml', line: 1 },
      ignored: { resource: 'WorkloadEntry/default/vm', file: 'z.yaml', line: 1 },
    },
  ]);
  assert.deepEqual(conversion.conflicts, []);
});
