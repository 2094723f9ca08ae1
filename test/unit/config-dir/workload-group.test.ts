import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { EMPTY_MESH_CONFIG, nextMeshConfig } from '../../../mesh/mesh-config.js';
import type { WorkloadGroupResource } from '../../../mesh/types.js';

function errorsOf(text: string, file = 'groups.yaml'): string[] {
  return loadConfigFile(file, text)
    .errors.map((e) => formatIssue(file, e))
    .sort();
}

const GOOD = [
  'apiVersion: networking.istio.io/v1', // 1
  'kind: WorkloadGroup', // 2
  'metadata:', // 3
  '  name: echo-vms', // 4
  '  namespace: prod', // 5
  'spec:', // 6
  '  metadata:', // 7
  '    labels: {app: echo, version: v3}', // 8
  '    annotations: {team: payments}', // 9
  '  template:', // 10
  '    ports: {grpc: 50051}', // 11
  '    serviceAccount: echo', // 12
  '    network: vm-net', // 13
  '    locality: eu/west-1/a', // 14
  '    weight: 3', // 15
  '    labels: {tier: backend}', // 16
  '  probe:', // 17
  '    initialDelaySeconds: 1', // 18
  '    periodSeconds: 2', // 19
  '    timeoutSeconds: 1', // 20
  '    successThreshold: 1', // 21
  '    failureThreshold: 2', // 22
  '    tcpSocket: {port: 50051}', // 23
  '',
].join('\n');

test('WorkloadGroup: Istio fields load as a typed resource in every networking.istio.io version', () => {
  for (const version of ['v1', 'v1beta1', 'v1alpha3']) {
    const load = loadConfigFile('groups.yaml', GOOD.replace('/v1\n', `/${version}\n`));
    assert.deepEqual(load.errors, [], version);
    assert.deepEqual(load.warnings, [], version);
    const [group] = load.resources as WorkloadGroupResource[];
    assert.equal(group?.kind, 'WorkloadGroup');
    assert.equal(group.apiVersion, `networking.istio.io/${version}`);
    assert.equal(group.namespace, 'prod');
    assert.deepEqual(group.spec, {
      metadata: { labels: { app: 'echo', version: 'v3' }, annotations: { team: 'payments' } },
      template: {
        ports: { grpc: 50051 },
        labels: { tier: 'backend' },
        network: 'vm-net',
        locality: 'eu/west-1/a',
        weight: 3,
        serviceAccount: 'echo',
      },
      probe: {
        initialDelaySeconds: 1,
        timeoutSeconds: 1,
        periodSeconds: 2,
        successThreshold: 1,
        failureThreshold: 2,
        tcpSocket: { port: 50051 },
      },
    });
  }
});

test('WorkloadGroup: every problem is reported with file, line and field path', () => {
  const text = [
    'apiVersion: networking.istio.io/v1', // 1
    'kind: WorkloadGroup', // 2
    'metadata: {name: bad}', // 3
    'spec:', // 4
    '  metadata:', // 5
    '    labels: {version: 3}', // 6
    '    annotations: {portolan.io/health: SLEEPY}', // 7
    '  template:', // 8
    '    address: 10.0.0.1', // 9
    '    ports: {grpc: 70000}', // 10
    '    locality: a//b', // 11
    '  probe:', // 12
    '    periodSeconds: -1', // 13
    '    failureThreshold: 1.5', // 14
    '    tcpSocket: {port: 80}', // 15
    '    httpGet:', // 16
    '      path: healthz', // 17
    '      port: 8080', // 18
    '      scheme: FTP', // 19
    '      httpHeaders: [{value: x}]', // 20
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text), [
    'groups.yaml:10 spec.template.ports.grpc: must be an integer in 1..65535',
    'groups.yaml:11 spec.template.locality: must be region, region/zone or region/zone/subzone, got "a//b"',
    'groups.yaml:12 spec.probe: only one of httpGet, tcpSocket may be set',
    'groups.yaml:13 spec.probe.periodSeconds: must be an integer in 0..3600',
    'groups.yaml:14 spec.probe.failureThreshold: must be an integer in 0..1000',
    'groups.yaml:17 spec.probe.httpGet.path: must start with /',
    'groups.yaml:19 spec.probe.httpGet.scheme: must be one of HTTP, HTTPS',
    'groups.yaml:20 spec.probe.httpGet.httpHeaders[0].name: is required',
    'groups.yaml:6 spec.metadata.labels.version: must be a string (quote numbers and booleans)',
    'groups.yaml:7 spec.metadata.annotations["portolan.io/health"]: must be one of HEALTHY, DRAINING, UNHEALTHY',
    'groups.yaml:9 spec.template.address: must be empty: each VM registers with its own address (agent --instance-ip)',
  ]);
});

test('WorkloadGroup: a probe needs a handler; tcpSocket, grpc and exec need their fields', () => {
  const group = (probe: string): string =>
    `apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: g}\nspec:\n  probe: ${probe}\n  template: {serviceAccount: sa}\n`;
  assert.deepEqual(errorsOf(group('{periodSeconds: 5}')), [
    'groups.yaml:5 spec.probe: needs one of httpGet, tcpSocket, grpc, exec',
  ]);
  assert.deepEqual(errorsOf(group('{tcpSocket: {host: "bad host"}}')), [
    'groups.yaml:5 spec.probe.tcpSocket.host: must be an IP address or a DNS name, got "bad host"',
    'groups.yaml:5 spec.probe.tcpSocket.port: is required',
  ]);
  assert.deepEqual(errorsOf(group('{grpc: {service: echo}}')), [
    'groups.yaml:5 spec.probe.grpc.port: is required',
  ]);
  assert.deepEqual(errorsOf(group('{exec: {command: []}}')), [
    'groups.yaml:5 spec.probe.exec.command: must not be empty',
  ]);
  // Istio: "template is required" (before, `spec: {}` loaded as a group of bare addresses).
  assert.deepEqual(
    errorsOf('apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: g}\nspec: {}\n'),
    ['groups.yaml:4 spec.template: is required'],
  );
  // An empty template is a valid group: entries with nothing but their address.
  assert.deepEqual(
    errorsOf(
      'apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: g}\nspec: {template: {}}\n',
    ),
    [],
  );
});

test('WorkloadGroups are part of the mesh config: an edit moves its generation, a move does not', () => {
  const load = (text: string, path = 'groups.yaml') => loadConfigFile(path, text);
  const first = nextMeshConfig(EMPTY_MESH_CONFIG, mergeFiles([load(GOOD)]));
  assert.equal(first.workloadGroups?.length, 1);
  assert.equal(first.generation, 1);
  const moved = nextMeshConfig(first, mergeFiles([load(`\n\n${GOOD}`, 'other.yaml')]));
  assert.equal(moved.generation, 1);
  const edited = nextMeshConfig(
    moved,
    mergeFiles([load(GOOD.replace('periodSeconds: 2', 'periodSeconds: 3'))]),
  );
  assert.equal(edited.generation, 2);
});
