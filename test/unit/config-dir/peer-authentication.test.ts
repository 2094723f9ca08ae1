// PeerAuthentication in the config directory: security.istio.io v1 and v1beta1 are read, errors name
// file, line and field path, a networking.istio.io apiVersion is not this kind's, and the merged
// policies reach MeshConfig (with the generation moving when they change).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { EMPTY_MESH_CONFIG, nextMeshConfig } from '../../../mesh/mesh-config.js';
import { mtlsModeFor } from '../../../xds/traffic/peer-authentication.js';
import { tlsLimitations } from '../../../xds/traffic/tls-limitations.js';

const STRICT_NS = `apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: default, namespace: shop}
spec:
  mtls: {mode: STRICT}
---
apiVersion: security.istio.io/v1beta1
kind: PeerAuthentication
metadata: {name: orders, namespace: shop}
spec:
  selector:
    matchLabels: {app: orders}
  portLevelMtls:
    "8080": {mode: DISABLE}
`;

test('v1 and v1beta1 PeerAuthentications load, merge into MeshConfig and decide the mode', () => {
  const load = loadConfigFile('pa.yaml', STRICT_NS);
  assert.deepEqual(load.errors, []);
  assert.deepEqual(
    load.resources.map((r) => [r.kind, r.apiVersion, r.namespace, r.name, r.line]),
    [
      ['PeerAuthentication', 'security.istio.io/v1', 'shop', 'default', 1],
      ['PeerAuthentication', 'security.istio.io/v1beta1', 'shop', 'orders', 7],
    ],
  );
  const mesh = nextMeshConfig(EMPTY_MESH_CONFIG, mergeFiles([load]));
  assert.equal(mesh.generation, 1);
  assert.equal(mesh.peerAuthentications?.length, 2);
  const orders = { namespace: 'shop', labels: { app: 'orders' } };
  assert.equal(mtlsModeFor(mesh, orders, 8080), 'DISABLE');
  assert.equal(mtlsModeFor(mesh, orders, 9090), 'STRICT');
  assert.equal(mtlsModeFor(mesh, { namespace: 'other', labels: {} }, 8080), undefined);
  assert.equal(nextMeshConfig(mesh, mergeFiles([load])).generation, 1, 'same content, same generation');
});

test('bad PeerAuthentications are errors with file, line and field path', () => {
  const text = [
    'apiVersion: security.istio.io/v1', // 1
    'kind: PeerAuthentication', // 2
    'metadata: {name: bad, namespace: shop}', // 3
    'spec:', // 4
    '  mtls: {mode: REQUIRED}', // 5
    '  portLevelMtls:', // 6
    '    http: {mode: STRICT}', // 7
    '',
  ].join('\n');
  const load = loadConfigFile('pa.yaml', text);
  assert.deepEqual(load.resources, []);
  assert.deepEqual(load.errors.map((e) => formatIssue('pa.yaml', e)).sort(), [
    'pa.yaml:5 spec.mtls.mode: must be one of UNSET, DISABLE, PERMISSIVE, STRICT',
    'pa.yaml:6 spec.portLevelMtls: needs a selector (port-level mTLS applies to selected workloads)',
    'pa.yaml:7 spec.portLevelMtls.http: must be keyed by a port number (1-65535)',
  ]);
});

test('a PeerAuthentication under networking.istio.io is an error naming its group (dropped, it would open mTLS)', () => {
  const load = loadConfigFile(
    'pa.yaml',
    'apiVersion: networking.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: x}\nspec: {}\n',
  );
  assert.deepEqual(load.resources, []);
  assert.deepEqual(
    load.errors.map((w) => formatIssue('pa.yaml', w)),
    [
      'pa.yaml:1 apiVersion: PeerAuthentication is not in networking.istio.io (did you mean "security.istio.io/v1"?)',
    ],
  );
});

test('what gRPC cannot take of the mTLS config is listed, with the field path', () => {
  const text = `${STRICT_NS}---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: mesh, namespace: istio-system}
spec:
  mtls: {mode: PERMISSIVE}
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: pay, namespace: shop}
spec:
  host: pay.shop.internal
  trafficPolicy:
    tls: {mode: ISTIO_MUTUAL}
    portLevelSettings:
      - port: {number: 443}
        tls: {mode: SIMPLE, caCertificates: /etc/ca.pem}
  subsets:
    - name: ext
      labels: {version: ext}
      trafficPolicy: {tls: {mode: MUTUAL, credentialName: pay-cert}}
`;
  const load = loadConfigFile('mtls.yaml', text);
  assert.deepEqual(load.errors, []);
  const mesh = nextMeshConfig(EMPTY_MESH_CONFIG, mergeFiles([load]));
  assert.deepEqual(
    tlsLimitations(mesh).map((l) => [l.resource, l.field, l.clients.join(',')]),
    [
      ['DestinationRule/shop/pay', 'spec.trafficPolicy.portLevelSettings[0].tls.mode', 'grpc'],
      ['DestinationRule/shop/pay', 'spec.subsets[0].trafficPolicy.tls.mode', 'grpc'],
      ['DestinationRule/shop/pay', 'spec.subsets[0].trafficPolicy.tls.credentialName', 'envoy,grpc'],
      ['PeerAuthentication/istio-system/mesh', 'spec.mtls.mode', 'grpc'],
    ],
  );
});
