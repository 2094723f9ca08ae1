// The agent's message handling (agent/xds/messages.ts): a local node is completed with the agent's
// identity where it leaves it out and refused where it claims another; resources are named by their
// field 1 whatever their type; a forwarded response carries the agent's nonce, the rest unchanged.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { claimNode, fieldOneString, readSotwResponse } from '../../../agent/xds/messages.js';
import { encodeResource } from '../../../xds/proto/resource.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../../../xds/proto/type-urls.js';
import {
  appendNonce,
  decodeDiscoveryResponse,
  encodeDeltaDiscoveryRequest,
  encodeDiscoveryRequest,
  encodeDiscoveryResponse,
} from '../../../xds/proto/wire.js';

const AGENT = { trustDomain: 'cluster.local', namespace: 'shop', serviceAccount: 'cart' };

function request(metadata: Record<string, unknown>, extra: object = {}): Buffer {
  const fields = Object.fromEntries(
    Object.entries(metadata).map(([k, v]) => [k, typeof v === 'string' ? { stringValue: v } : v]),
  );
  return encodeDiscoveryRequest({
    node: { id: 'app-1', cluster: 'c', user_agent_name: 'gRPC Node Pure JS', metadata: { fields }, ...extra },
    type_url: LISTENER,
  });
}

test('a node that leaves its identity out is completed with the agent’s', () => {
  const claim = claimNode(
    request({ LABELS: { structValue: { fields: { app: { stringValue: 'cart' } } } } }),
    'sotw',
    AGENT,
  );
  assert.equal(claim.ok, true);
  if (!claim.ok) return;
  assert.deepEqual(
    {
      NAMESPACE: claim.info.metadata?.NAMESPACE,
      SERVICE_ACCOUNT: claim.info.metadata?.SERVICE_ACCOUNT,
      TRUST_DOMAIN: claim.info.metadata?.TRUST_DOMAIN,
      LABELS: claim.info.metadata?.LABELS,
    },
    { NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart', TRUST_DOMAIN: 'cluster.local', LABELS: { app: 'cart' } },
  );
  assert.equal(claim.info.id, 'app-1');
  // The same claim on a delta stream.
  const delta = claimNode(
    encodeDeltaDiscoveryRequest({
      node: { id: 'envoy-1', metadata: { fields: { NAMESPACE: { stringValue: 'shop' } } } },
      type_url: CLUSTER,
    }),
    'delta',
    AGENT,
  );
  assert.equal(delta.ok && delta.info.metadata?.SERVICE_ACCOUNT, 'cart');
});

test('a node claiming another identity is refused; a malformed one is invalid', () => {
  const other = claimNode(request({ NAMESPACE: 'shop', SERVICE_ACCOUNT: 'payments' }), 'sotw', AGENT);
  assert.deepEqual(other, {
    ok: false,
    code: grpc.status.PERMISSION_DENIED,
    message:
      "node app-1 claims SERVICE_ACCOUNT=payments, but this agent is spiffe://cluster.local/ns/shop/sa/cart: a local client speaks only for the agent's identity",
  });
  const domain = claimNode(request({ TRUST_DOMAIN: 'evil.org' }), 'sotw', AGENT);
  assert.equal(!domain.ok && domain.code, grpc.status.PERMISSION_DENIED);
  const notString = claimNode(request({ NAMESPACE: { numberValue: 3 } }), 'sotw', AGENT);
  assert.deepEqual(notString, {
    ok: false,
    code: grpc.status.INVALID_ARGUMENT,
    message: 'node metadata NAMESPACE must be a string',
  });
  const badIps = claimNode(request({ INSTANCE_IPS: 'not-an-ip' }), 'sotw', AGENT);
  assert.equal(!badIps.ok && badIps.code, grpc.status.INVALID_ARGUMENT);
  assert.match(!badIps.ok ? badIps.message : '', /INSTANCE_IPS/);
  const noNode = claimNode(encodeDiscoveryRequest({ type_url: LISTENER }), 'sotw', AGENT);
  assert.equal(!noNode.ok && noNode.code, grpc.status.INVALID_ARGUMENT);
});

test('every resource type is named by its field 1', () => {
  const cases: [string, object, string][] = [
    [LISTENER, { name: 'l1' }, 'l1'],
    [ROUTE, { name: 'r1' }, 'r1'],
    [CLUSTER, { name: 'c1', connect_timeout: { seconds: 1 } }, 'c1'],
    [ENDPOINT, { cluster_name: 'e1', endpoints: [{ lb_endpoints: [] }] }, 'e1'],
  ];
  for (const [typeUrl, message, name] of cases) {
    const r = encodeResource(typeUrl, name, message);
    assert.equal(fieldOneString(r.value), name, typeUrl);
  }
  assert.equal(fieldOneString(Buffer.from([0x08, 0x96, 0x01])), '', 'no field 1 string: empty');
  assert.equal(fieldOneString(Buffer.from([0x0a, 0x05, 0x61])), 'a', 'a truncated field reads what is there');
});

test('a forwarded response keeps its bytes and takes the agent’s nonce', () => {
  const resources = [
    encodeResource(CLUSTER, 'c1', { name: 'c1' }),
    encodeResource(CLUSTER, 'c2', { name: 'c2' }),
  ];
  const upstream = encodeDiscoveryResponse({
    versionInfo: 'v9',
    resources,
    typeUrl: CLUSTER,
    nonce: 'server-17',
  });
  const read = readSotwResponse(upstream);
  assert.equal(read.nonce, 'server-17');
  assert.deepEqual(
    read.resources.map((r) => [r.name, r.version]),
    resources.map((r) => [r.name, r.version]),
  );
  const local = decodeDiscoveryResponse(appendNonce(upstream, 'a3'));
  assert.equal(local.nonce, 'a3');
  assert.equal(local.version_info, 'v9');
  assert.deepEqual(
    local.resources.map((r) => Buffer.from(r.value)),
    resources.map((r) => r.value),
  );
});
