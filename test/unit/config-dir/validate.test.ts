import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { parseDuration } from '../../../config-dir/validate/common.js';

const SE_HEADER = 'apiVersion: networking.istio.io/v1\nkind: ServiceEntry\nmetadata:\n  name: svc\nspec:\n';

function errorsOf(text: string, file = 'services.yaml'): string[] {
  return loadConfigFile(file, text).errors.map((e) => formatIssue(file, e));
}

test('every problem in a ServiceEntry is reported with file, line and field path', () => {
  const text =
    SE_HEADER + // lines 1-5
    [
      '  hosts: [a.example.internal]', // 6
      '  resolution: STATIC', // 7
      '  ports:', // 8
      '    - name: http', // 9
      '      number: 80', // 10
      '    - name: http', // 11
      '      number: 70000', // 12
      '      protocol: SMTP', // 13
      '  endpoints:', // 14
      '    - address: db.example.internal', // 15
      '      ports: {grpc: 9000}', // 16
      '',
    ].join('\n');
  const load = loadConfigFile('services.yaml', text);
  assert.deepEqual(load.resources, [], 'a file with errors contributes nothing');
  assert.deepEqual(
    load.errors.map((e) => formatIssue('services.yaml', e)).sort(),
    [
      'services.yaml:11 spec.ports[1].name: duplicate port name "http"',
      'services.yaml:12 spec.ports[1].number: must be an integer in 1..65535',
      'services.yaml:13 spec.ports[1].protocol: must be one of HTTP, HTTP2, GRPC, HTTPS, TLS, TCP, MONGO, REDIS, MYSQL, UDP, got "SMTP"',
      'services.yaml:15 spec.endpoints[0].address: resolution STATIC needs an IP address or unix:///path',
      'services.yaml:16 spec.endpoints[0].ports.grpc: no service port named "grpc"',
    ].sort(),
  );
  assert.equal(
    load.errors.find((e) => e.path === 'spec.ports[1].number')?.column,
    7,
    'the column of the key',
  );
});

test('protocol is case-insensitive and empty means TCP', () => {
  const load = loadConfigFile(
    'p.yaml',
    SE_HEADER +
      '  hosts: [a.example]\n  ports:\n    - {name: web, number: 80, protocol: http}\n    - {name: raw, number: 81, protocol: ""}\n',
  );
  assert.deepEqual(load.errors, []);
  const se = load.resources[0];
  assert.equal(se?.kind, 'ServiceEntry');
  assert.deepEqual(
    se.spec.ports.map((p) => p.protocol),
    ['HTTP', undefined],
  );
});

test('ServiceEntry rules: hosts and ports required, wildcards only with NONE, not both endpoints and selector', () => {
  assert.deepEqual(errorsOf(SE_HEADER + '  resolution: DNS\n'), [
    'services.yaml:5 spec.hosts: is required',
    'services.yaml:5 spec.ports: is required',
  ]);
  assert.deepEqual(
    errorsOf(SE_HEADER + '  hosts: ["*.example.com"]\n  resolution: DNS\n  ports: [{name: h, number: 80}]\n'),
    ['services.yaml:6 spec.hosts[0]: wildcard hosts need resolution NONE, not DNS'],
  );
  assert.deepEqual(
    errorsOf(SE_HEADER + '  hosts: ["*.example.com"]\n  ports: [{name: h, number: 80}]\n'),
    [],
  );
  assert.deepEqual(
    errorsOf(
      SE_HEADER +
        '  hosts: [a.example]\n  resolution: STATIC\n  ports: [{name: h, number: 80}]\n' +
        '  endpoints: [{address: 10.0.0.1}]\n  workloadSelector: {labels: {app: a}}\n',
    ),
    ['services.yaml:10 spec.workloadSelector: only one of endpoints and workloadSelector may be set'],
  );
  assert.deepEqual(
    errorsOf(
      SE_HEADER +
        '  hosts: [a.example]\n  ports: [{name: h, number: 80}]\n  endpoints: [{address: 10.0.0.1}]\n',
    ),
    ['services.yaml:8 spec.endpoints: must be empty when resolution is NONE'],
  );
  assert.deepEqual(
    errorsOf(
      SE_HEADER +
        '  hosts: [a.example]\n  resolution: DNS_ROUND_ROBIN\n  ports: [{name: h, number: 80}]\n  endpoints: [{address: a.io}, {address: b.io}]\n',
    ),
    ['services.yaml:9 spec.endpoints: resolution DNS_ROUND_ROBIN allows at most one endpoint'],
  );
  assert.deepEqual(errorsOf(SE_HEADER + '  hosts: [a.example]\n  ports: [{number: 80}]\n'), [
    'services.yaml:7 spec.ports[0].name: is required',
  ]);
});

test('STATIC accepts IP and unix:// endpoints; a unix:// endpoint needs exactly one port', () => {
  const ok =
    SE_HEADER +
    '  hosts: [a.example]\n  resolution: STATIC\n  ports: [{name: h, number: 80}]\n  endpoints: [{address: "10.1.2.3"}, {address: "unix:///var/run/a.sock"}, {address: "::1"}]\n';
  assert.deepEqual(errorsOf(ok), []);
  const twoPorts =
    SE_HEADER +
    '  hosts: [a.example]\n  resolution: STATIC\n  ports: [{name: h, number: 80}, {name: g, number: 81}]\n  endpoints:\n    - address: "unix:///var/run/a.sock"\n';
  assert.deepEqual(errorsOf(twoPorts), [
    'services.yaml:10 spec.endpoints[0].address: a unix:// endpoint needs exactly one service port',
  ]);
});

test('WorkloadEntry: address required, labels must be strings, health annotation checked', () => {
  const text = [
    'apiVersion: networking.istio.io/v1',
    'kind: WorkloadEntry',
    'metadata:',
    '  name: vm-1',
    '  annotations:',
    '    portolan.io/health: SLEEPY',
    'spec:',
    '  labels:',
    '    version: 2',
    '  locality: us-east-1//a',
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text, 'vm.yaml').sort(), [
    'vm.yaml:10 spec.locality: must be region, region/zone or region/zone/subzone, got "us-east-1//a"',
    'vm.yaml:6 metadata.annotations["portolan.io/health"]: must be one of HEALTHY, DRAINING, UNHEALTHY',
    'vm.yaml:7 spec.address: is required',
    'vm.yaml:9 spec.labels.version: must be a string (quote numbers and booleans)',
  ]);
});

test('other API groups and Istio kinds Portolan does not serve are warnings; the rest of the file still loads', () => {
  const text = [
    'apiVersion: v1',
    'kind: ConfigMap',
    'metadata: {name: x}',
    '---',
    'apiVersion: networking.istio.io/v1',
    'kind: EnvoyFilter',
    'metadata: {name: gw}',
    '---',
    'apiVersion: gateway.networking.k8s.io/v1',
    'kind: Gateway',
    'metadata: {name: k8s}',
    '---',
    'apiVersion: networking.istio.io/v1alpha3',
    'kind: WorkloadEntry',
    'metadata: {name: vm}',
    'spec: {address: 10.0.0.9}',
    '',
  ].join('\n');
  const load = loadConfigFile('mixed.yaml', text);
  assert.deepEqual(load.errors, []);
  assert.deepEqual(
    load.resources.map((r) => `${r.kind}/${r.name}@${r.line}`),
    ['WorkloadEntry/vm@13'],
  );
  assert.deepEqual(
    load.warnings.map((w) => formatIssue('mixed.yaml', w)),
    [
      'mixed.yaml:2 kind: ConfigMap (v1) is not a kind Portolan serves; ignored',
      'mixed.yaml:6 kind: EnvoyFilter (networking.istio.io/v1) is not a kind Portolan serves; ignored',
      'mixed.yaml:9 apiVersion: Gateway of gateway.networking.k8s.io/v1 is not the Istio Gateway (networking.istio.io) Portolan serves; ignored',
    ],
  );
});

test('envelope errors: missing kind, missing metadata.name, not an object', () => {
  assert.deepEqual(errorsOf('apiVersion: networking.istio.io/v1\nmetadata: {name: a}\n'), [
    'services.yaml:1 kind: is required',
  ]);
  assert.deepEqual(
    errorsOf(
      'apiVersion: networking.istio.io/v1\nkind: WorkloadEntry\nmetadata: {namespace: prod}\nspec: {address: 10.0.0.1}\n',
    ),
    ['services.yaml:3 metadata.name: is required'],
  );
  assert.deepEqual(errorsOf('just a string\n'), [
    'services.yaml:1 must be an object with apiVersion, kind, metadata and spec',
  ]);
});

test('VirtualService: destination host required, weights 0..100 summing to 100, durations parse', () => {
  const text = [
    'apiVersion: networking.istio.io/v1beta1', // 1
    'kind: VirtualService', // 2
    'metadata: {name: echo}', // 3
    'spec:', // 4
    '  hosts: [echo.example.internal]', // 5
    '  http:', // 6
    '    - timeout: 1.5', // 7
    '      retries: {attempts: 3, perTryTimeout: 100ms}', // 8
    '      route:', // 9
    '        - destination: {host: echo.example.internal, subset: v1}', // 10
    '          weight: 70', // 11
    '        - destination: {subset: v2}', // 12
    '          weight: 20', // 13
    '    - match: [{uri: {prefix: /a, exact: /b}}]', // 14
    '      redirect: {uri: /c}', // 15
    '      rewrite: {uri: /d}', // 16
    '  tcp:', // 17
    '    - route:', // 18
    '        - destination: {host: db.internal}', // 19
    '          weight: 101', // 20
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text, 'vs.yaml').sort(), [
    'vs.yaml:12 spec.http[0].route[1].destination.host: is required',
    'vs.yaml:14 spec.http[1].match[0].uri: exactly one of exact, prefix, regex must be set',
    'vs.yaml:16 spec.http[1].rewrite: cannot be combined with redirect',
    'vs.yaml:20 spec.tcp[0].route[0].weight: must be an integer in 0..100',
    'vs.yaml:7 spec.http[0].timeout: must be a duration such as 1.5s or 100ms, got 1.5',
    'vs.yaml:9 spec.http[0].route: weights must sum to 100 when there are several destinations, got 90',
  ]);
});

test('a valid VirtualService keeps its spec as written', () => {
  const text =
    'apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: echo, namespace: prod}\nspec:\n' +
    '  hosts: [echo.example.internal]\n  http:\n    - timeout: 1.5s\n      fault: {delay: {fixedDelay: 5ms, percentage: {value: 0.5}}}\n' +
    '      route:\n        - {destination: {host: echo.example.internal, subset: v1}, weight: 90}\n        - {destination: {host: echo.example.internal, subset: v2}, weight: 10}\n';
  const load = loadConfigFile('vs.yaml', text);
  assert.deepEqual(load.errors, []);
  assert.deepEqual(load.warnings, []);
  const vs = load.resources[0];
  assert.equal(vs?.kind, 'VirtualService');
  assert.equal(vs.namespace, 'prod');
  assert.equal(vs.spec.http?.[0]?.timeout, '1.5s');
});

test('DestinationRule: host required, unique subset names, enum and duration checks', () => {
  const text = [
    'apiVersion: networking.istio.io/v1',
    'kind: DestinationRule',
    'metadata: {name: echo}',
    'spec:',
    '  trafficPolicy:',
    '    loadBalancer: {simple: FASTEST}',
    '    connectionPool: {tcp: {connectTimeout: soon}}',
    '  subsets:',
    '    - name: v1',
    '    - name: v1',
    '      labels: {version: v1}',
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text, 'dr.yaml').sort(), [
    'dr.yaml:10 spec.subsets[1].name: duplicate subset name "v1"',
    'dr.yaml:4 spec.host: is required',
    'dr.yaml:6 spec.trafficPolicy.loadBalancer.simple: must be one of UNSPECIFIED, LEAST_CONN, RANDOM, PASSTHROUGH, ROUND_ROBIN, LEAST_REQUEST',
    'dr.yaml:7 spec.trafficPolicy.connectionPool.tcp.connectTimeout: must be a duration such as 1.5s or 100ms, got "soon"',
  ]);
});

test('DestinationRule: one of simple and consistentHash, usable durations and ring sizes', () => {
  const text = [
    'apiVersion: networking.istio.io/v1', // 1
    'kind: DestinationRule', // 2
    'metadata: {name: echo}', // 3
    'spec:', // 4
    '  host: echo.example.internal', // 5
    '  trafficPolicy:', // 6
    '    loadBalancer:', // 7
    '      simple: RANDOM', // 8
    '      consistentHash: {httpHeaderName: x-user, minimumRingSize: 9000000}', // 9
    '    connectionPool:', // 10
    '      tcp: {connectTimeout: 0s, tcpKeepalive: {time: 500ms}}', // 11
    '    outlierDetection: {interval: 0ms, baseEjectionTime: 30s}', // 12
    '    portLevelSettings:', // 13
    '      - port: {number: 80}', // 14
    '        loadBalancer: {consistentHash: {useSourceIp: true, httpCookie: {name: c}}}', // 15
    '  subsets:', // 16
    '    - name: v1', // 17
    '      labels: {}', // 18
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text, 'dr.yaml').sort(), [
    'dr.yaml:11 spec.trafficPolicy.connectionPool.tcp.connectTimeout: must be at least 1ms, got "0s"',
    'dr.yaml:11 spec.trafficPolicy.connectionPool.tcp.tcpKeepalive.time: must be at least 1s (TCP keepalive counts in seconds), got "500ms"',
    'dr.yaml:12 spec.trafficPolicy.outlierDetection.interval: must be at least 1ms, got "0ms"',
    'dr.yaml:15 spec.trafficPolicy.portLevelSettings[0].loadBalancer.consistentHash: only one of httpCookie, useSourceIp may be set',
    'dr.yaml:7 spec.trafficPolicy.loadBalancer: only one of simple, consistentHash may be set',
    'dr.yaml:9 spec.trafficPolicy.loadBalancer.consistentHash.minimumRingSize: must be an integer in 0..8388608',
  ]);
});

test('DestinationRule localityLbSetting: Istio’s checks of distribute, failover and failoverPriority', () => {
  const rule = (lines: string[]) =>
    [
      'apiVersion: networking.istio.io/v1', // 1
      'kind: DestinationRule', // 2
      'metadata: {name: echo}', // 3
      'spec:', // 4
      '  host: echo.example.internal', // 5
      '  trafficPolicy:', // 6
      '    loadBalancer:', // 7
      '      localityLbSetting:', // 8
      ...lines.map((l) => `        ${l}`), // 9 ...
      '',
    ].join('\n');
  assert.deepEqual(
    errorsOf(
      rule([
        'distribute:', // 9
        '  - from: us-east/*', // 10
        '    to: {"us-east/*": 70, "us-west/*": 20}', // 11
        '  - from: us-east/zone1', // 12
        '    to: {"us-west/a/*/b": 50, "us-west//x": 50, "*": 0}', // 13
        '  - from: eu*', // 14
        '    to: {"eu/a": 60, "eu": 40}', // 15
        'failover:', // 16
        '  - {from: us-east, to: us-east}', // 17
        '  - {from: us-west/a, to: "eu*"}', // 18
      ]),
      'dr.yaml',
    ).sort(),
    [
      'dr.yaml:11 spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[0].to: weights must add up to 100, got 90',
      'dr.yaml:13 spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[1].to["*"]: must be an integer in 1..100',
      'dr.yaml:13 spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[1].to["us-west//x"]: must not have an empty part, got "us-west//x"',
      'dr.yaml:13 spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[1].to["us-west/a/*/b"]: must be region, region/zone or region/zone/subzone, got "us-west/a/*/b"',
      'dr.yaml:14 spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[2].from: may only end in "*" (one, as the last part), got "eu*"',
      'dr.yaml:15 spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[2].to: "eu" overlaps "eu/a": each locality may be named once',
      'dr.yaml:17 spec.trafficPolicy.loadBalancer.localityLbSetting.failover[0]: from and to must be different regions, both are "us-east"',
      'dr.yaml:18 spec.trafficPolicy.loadBalancer.localityLbSetting.failover[1].from: must be a region (no "/" or "*"), got "us-west/a"',
      'dr.yaml:18 spec.trafficPolicy.loadBalancer.localityLbSetting.failover[1].to: must be a region (no "/" or "*"), got "eu*"',
      'dr.yaml:8 spec.trafficPolicy.loadBalancer.localityLbSetting: distribute and failover cannot both be set',
      'dr.yaml:9 spec.trafficPolicy.loadBalancer.localityLbSetting.distribute: "us-east/zone1" overlaps "us-east/*": each locality may be named once',
    ],
  );
  assert.deepEqual(
    errorsOf(
      rule([
        'failover: [{from: a, to: b}]', // 9
        'failoverPriority: [topology.istio.io/network, topology.kubernetes.io/zone, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o]', // 10
      ]),
      'dr.yaml',
    ).sort(),
    [
      'dr.yaml:10 spec.trafficPolicy.loadBalancer.localityLbSetting.failoverPriority: at most 16 entries, got 17',
      'dr.yaml:10 spec.trafficPolicy.loadBalancer.localityLbSetting.failoverPriority[1]: topology.kubernetes.io/zone cannot be used together with failover (both rank by locality)',
    ].sort(),
  );
  assert.deepEqual(errorsOf(rule(['failoverPriority: [a, "=x"]']), 'dr.yaml'), [
    'dr.yaml:9 spec.trafficPolicy.loadBalancer.localityLbSetting.failoverPriority[1]: must be a label key or key=value, got "=x"',
  ]);
  const ok = loadConfigFile(
    'dr.yaml',
    rule([
      'distribute: [{from: "*", to: {"*": 100}}]',
      'failoverPriority: [topology.istio.io/network]',
      'enabled: true',
    ]),
  );
  assert.deepEqual(ok.errors, []);
  assert.deepEqual(
    ok.warnings.map((w) => `${w.path}: ${w.message}`),
    [
      'spec.trafficPolicy.loadBalancer.localityLbSetting.failoverPriority: ignored: distribute is set, and only one of them applies',
    ],
  );
});

test('Sidecar: egress hosts in namespace/host form, one portless entry, known outbound policy', () => {
  const text = [
    'apiVersion: networking.istio.io/v1', // 1
    'kind: Sidecar', // 2
    'metadata: {name: default, namespace: shop}', // 3
    'spec:', // 4
    '  workloadSelector: {labels: {app: web}}', // 5
    '  egress:', // 6
    '    - hosts: ["./*", "istio-system/*", "*/*.example.com"]', // 7
    '    - hosts: [echo.example.internal, "Bad/x.example.com", "./bad host"]', // 8
    '    - port: {number: 8080, protocol: HTTP}', // 9
    '      hosts: ["*/*"]', // 10
    '    - port: {number: 8080}', // 11
    '      hosts: ["*/*"]', // 12
    '  outboundTrafficPolicy: {mode: SOMETIMES}', // 13
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text, 'sc.yaml').sort(), [
    'sc.yaml:11 spec.egress[3].port.number: duplicate port 8080',
    'sc.yaml:13 spec.outboundTrafficPolicy.mode: must be one of ALLOW_ANY, REGISTRY_ONLY',
    'sc.yaml:8 spec.egress[1].hosts[0]: must be namespace/host (e.g. "./*", "*/*", "istio-system/*"), got "echo.example.internal"',
    'sc.yaml:8 spec.egress[1].hosts[1]: namespace part must be ".", "*", "~" or a namespace name, got "Bad"',
    'sc.yaml:8 spec.egress[1].hosts[2]: host part must be a hostname or wildcard, got "bad host"',
    'sc.yaml:8 spec.egress[1]: only one egress entry may omit port; egress[0] already does',
  ]);
  const good = loadConfigFile(
    'sc.yaml',
    text.split('\n').slice(0, 7).join('\n') + '\n  ingress: [{port: {number: 80}}]\n',
  );
  assert.deepEqual(good.errors, []);
  assert.deepEqual(
    good.warnings.map((w) => formatIssue('sc.yaml', w)),
    ['sc.yaml:8 spec.ingress: an Istio field Portolan does not implement; ignored'],
  );
  const sidecar = good.resources[0];
  assert.equal(sidecar?.kind, 'Sidecar');
  assert.deepEqual(sidecar.kind === 'Sidecar' && sidecar.spec.egress?.[0]?.hosts, [
    './*',
    'istio-system/*',
    '*/*.example.com',
  ]);
});

test('Gateway: servers need port and hosts, TLS files for terminating modes, no secrets by name', () => {
  const text = [
    'apiVersion: networking.istio.io/v1',
    'kind: Gateway',
    'metadata: {name: ingress}',
    'spec:',
    '  selector: {istio: ingressgateway}',
    '  servers:',
    '    - port: {number: 443, name: https, protocol: HTTPS}',
    '      hosts: [shop.example.com]',
    '      tls: {mode: SIMPLE, credentialName: shop-cert}',
    '    - port: {number: 80, protocol: HTTP}',
    '      hosts: [shop.example.com]',
    '    - port: {number: 80, protocol: HTTP}',
    '      hosts: [shop.example.com]',
    '    - port: {number: 8443, protocol: TLS}',
    '      hosts: ["*"]',
    '    - port: {number: 81, protocol: HTTP}',
    '      hosts: ["bad host", "Ns/x.example.com", "./ok.example.com"]',
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text, 'gw.yaml').sort(), [
    'gw.yaml:13 spec.servers[2].hosts: host "shop.example.com" on port 80 is already served by servers[1]',
    'gw.yaml:14 spec.servers[3].tls: is required for protocol TLS',
    'gw.yaml:17 spec.servers[4].hosts[0]: must be a hostname or wildcard, got "bad host"',
    'gw.yaml:17 spec.servers[4].hosts[1]: namespace part must be ".", "*" or a namespace name, got "Ns"',
    'gw.yaml:9 spec.servers[0].tls.credentialName: Kubernetes secrets are not available outside Kubernetes; use serverCertificate and privateKey (file paths)',
    'gw.yaml:9 spec.servers[0].tls.privateKey: is required for mode SIMPLE',
    'gw.yaml:9 spec.servers[0].tls.serverCertificate: is required for mode SIMPLE',
  ]);
  const good = loadConfigFile(
    'gw.yaml',
    text.split('\n').slice(0, 8).join('\n') +
      '\n      tls: {mode: SIMPLE, serverCertificate: /etc/gw/cert.pem, privateKey: /etc/gw/key.pem}\n',
  );
  assert.deepEqual(good.errors, []);
  assert.equal(good.resources[0]?.kind, 'Gateway');
});

test('parseDuration reads Go-style durations', () => {
  assert.equal(parseDuration('1.5s'), 1500);
  assert.equal(parseDuration('100ms'), 100);
  assert.equal(parseDuration('1m30s'), 90_000);
  assert.equal(parseDuration('1h'), 3_600_000);
  assert.equal(parseDuration('250us'), 0.25);
  assert.equal(parseDuration('0'), 0);
  assert.equal(parseDuration('1.5'), undefined);
  assert.equal(parseDuration('s'), undefined);
  assert.equal(parseDuration('-1s'), undefined);
  assert.equal(parseDuration('1s '), undefined);
});
