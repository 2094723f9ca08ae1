// Reading an Envoy node: Istio's id form and metadata, Portolan's keys, and clear refusals.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NodeError, proxyFromNode } from '../../../xds/proxy/proxy.js';
import { decodeDiscoveryRequest, encodeDiscoveryRequest } from '../../../xds/proto/wire.js';

const envoy = (id: string, metadata: Record<string, unknown> = {}) =>
  proxyFromNode({ id, user_agent_name: 'envoy', metadata });

test('an Istio sidecar id gives the kind, role and IP; metadata gives labels, namespace, account', () => {
  const p = envoy('sidecar~10.1.2.3~web-1~ns.svc.cluster.local', {
    NAMESPACE: 'shop',
    LABELS: { app: 'web' },
    SERVICE_ACCOUNT: 'web-sa',
    INSTANCE_IPS: '10.1.2.3,10.1.2.4',
    INTERCEPTION_MODE: 'REDIRECT',
  });
  assert.equal(p.kind, 'envoy');
  assert.deepEqual(p.ips, ['10.1.2.3', '10.1.2.4']);
  assert.equal(p.namespace, 'shop');
  assert.equal(p.envoy?.role, 'sidecar');
  assert.deepEqual(p.envoy?.labels, { app: 'web' });
  assert.equal(p.envoy?.serviceAccount, 'web-sa');
  assert.deepEqual(p.envoy?.outboundModes, ['transparent'], 'intercepted nodes default to transparent');
  assert.equal(p.envoy?.outboundPolicy, 'ALLOW_ANY');
});

test('a router id is a gateway; a plain id without interception defaults to explicit upstreams', () => {
  assert.equal(envoy('router~10.0.0.1~gw~ns').envoy?.role, 'router');
  const plain = envoy('vm-7', {
    PORTOLAN_UPSTREAMS: 'a.internal:80=18080, b.internal:5432=127.0.0.2:15432',
    PORTOLAN_APP_PORTS: ['8080=18081'],
  });
  assert.deepEqual(plain.envoy?.outboundModes, ['explicit']);
  assert.deepEqual(plain.envoy?.upstreams, [
    { hostname: 'a.internal', port: 80, bind: '127.0.0.1', localPort: 18080 },
    { hostname: 'b.internal', port: 5432, bind: '127.0.0.2', localPort: 15432 },
  ]);
  assert.deepEqual(plain.envoy?.appPorts, { 8080: 18081 });
});

test('proxyless gRPC clients keep working and carry no Envoy settings', () => {
  const p = proxyFromNode({ id: 'client-1', user_agent_name: 'gRPC Node' });
  assert.equal(p.kind, 'grpc');
  assert.equal(p.envoy, undefined);
});

for (const [what, id, metadata] of [
  ['a malformed Istio id', 'sidecar~10.0.0.1~x', {}],
  ['an unknown id type', 'proxy~10.0.0.1~x~ns', {}],
  ['a bad IP in the id', 'sidecar~not-an-ip~x~ns', {}],
  ['a bad INSTANCE_IPS entry', 'vm', { INSTANCE_IPS: '10.0.0.1,nope' }],
  ['non-string LABELS', 'vm', { LABELS: { app: 3 } }],
  ['an unknown outbound mode', 'vm', { PORTOLAN_OUTBOUND: 'magic' }],
  ['an unknown outbound policy', 'vm', { PORTOLAN_OUTBOUND_POLICY: 'SOMETIMES' }],
  ['a malformed upstream', 'vm', { PORTOLAN_UPSTREAMS: 'a.internal=80' }],
  ['an upstream port out of range', 'vm', { PORTOLAN_UPSTREAMS: 'a.internal:80=70000' }],
  ['two upstreams on one local port', 'vm', { PORTOLAN_UPSTREAMS: 'a:80=9000,b:81=9000' }],
  ['an unknown INTERCEPTION_MODE', 'vm', { INTERCEPTION_MODE: 'MAGIC' }],
] as const) {
  test(`${what} is a NodeError`, () => {
    assert.throws(() => envoy(id, metadata), NodeError);
  });
}

test('node metadata read off the wire (google.protobuf.Struct) reaches the proxy', () => {
  const bytes = encodeDiscoveryRequest({
    type_url: 'x',
    node: {
      id: 'vm-1',
      metadata: {
        fields: {
          NAMESPACE: { stringValue: 'shop' },
          LABELS: { structValue: { fields: { app: { stringValue: 'web' } } } },
          PORTOLAN_UPSTREAMS: { listValue: { values: [{ stringValue: 'a.internal:80=18080' }] } },
        },
      },
    },
  });
  const node = decodeDiscoveryRequest(bytes).node ?? assert.fail('node decoded');
  const p = proxyFromNode({ ...node, user_agent_name: 'envoy' });
  assert.equal(p.namespace, 'shop');
  assert.deepEqual(p.envoy?.labels, { app: 'web' });
  assert.equal(p.envoy?.upstreams[0]?.localPort, 18080);
});
