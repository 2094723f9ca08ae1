// The client-capabilities table: which rules a node's user agent matches, what lb_policy each client
// is rendered, and that clients with a known defect get a rendering (cache view) of their own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { clientProfile, profileFor, type ClientId } from '../../../xds/proxy/client-capabilities.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';

const grpc = (userAgent: string, userAgentVersion: string): ClientId => ({
  kind: 'grpc',
  userAgent,
  userAgentVersion,
});
const ids = (c: ClientId): string[] => profileFor(c).rules.map((r) => r.id);

test('C-core 1.50 and 1.51 are withheld RING_HASH (grpc/grpc#31766); 1.52, older C-core and grpc-js are not', () => {
  for (const c of [
    grpc('gRPC C-core linux Python', 'C-core 29.0.0 Python 1.51.1'),
    grpc('gRPC C-core linux', 'C-core 28.0.0'),
    grpc('gRPC C-core', '1.51.3'),
  ]) {
    assert.ok(ids(c).includes('ccore-ring-hash-crash'), JSON.stringify(c));
    assert.equal(profileFor(c).lbPolicy('RING_HASH'), 'ROUND_ROBIN');
    assert.equal(profileFor(c).key, 'ccore-ring-hash-crash');
  }
  for (const c of [
    grpc('gRPC C-core linux Python', 'C-core 30.0.0 Python 1.52.0'),
    grpc('gRPC C-core linux', 'C-core 27.0.0'),
    grpc('gRPC Node', '1.14.1'),
    grpc('grpc-java', '1.60.0'),
  ]) {
    assert.ok(!ids(c).includes('ccore-ring-hash-crash'), JSON.stringify(c));
    assert.equal(profileFor(c).lbPolicy('RING_HASH'), 'RING_HASH');
    assert.equal(profileFor(c).key, '', 'the common rendering');
  }
});

test('every gRPC client gets ROUND_ROBIN for the policies no gRPC client takes; Envoy gets what it asks for', () => {
  const js = profileFor(grpc('gRPC Node', '1.14.1'));
  for (const p of ['LEAST_REQUEST', 'RANDOM', 'MAGLEV', 'CLUSTER_PROVIDED'] as const)
    assert.equal(js.lbPolicy(p), 'ROUND_ROBIN');
  assert.deepEqual(ids(grpc('gRPC Node', '1.14.1')), [
    'grpc-lb-policies',
    'ccore-locality-weights',
    'ccore-required-fields',
    'grpc-eds-duplicate-address',
    'grpc-eds-priority-weight-sum',
  ]);
  const envoy = profileFor({ kind: 'envoy', userAgent: 'envoy', userAgentVersion: '' });
  assert.deepEqual(
    envoy.rules.map((r) => r.id),
    ['envoy-validate-rules'],
    'Envoy is only checked, never rendered differently',
  );
  assert.equal(envoy.lbPolicy('LEAST_REQUEST'), 'LEAST_REQUEST');
});

test('the node’s user agent version reaches the profile; an affected client has its own cluster view', () => {
  const ccore = proxyFromNode({
    id: 'c',
    user_agent_name: 'gRPC C-core linux Python',
    user_agent_version: 'C-core 29.0.0 Python 1.51.1',
  });
  const js = proxyFromNode({ id: 'j', user_agent_name: 'gRPC Node', user_agent_version: '1.14.1' });
  assert.equal(ccore.userAgentVersion, 'C-core 29.0.0 Python 1.51.1');
  assert.equal(clientProfile(ccore).key, 'ccore-ring-hash-crash');
  assert.notEqual(grpcClusterGenerator.viewKey(ccore), grpcClusterGenerator.viewKey(js));
  assert.equal(grpcClusterGenerator.viewKey(js), 'default', 'unchanged for unaffected clients');
});

test('proxies of one client build share one profile; another version, agent or kind gets its own', () => {
  const node = (id: string, name: string, version: string) =>
    proxyFromNode({ id, user_agent_name: name, user_agent_version: version });
  const a = clientProfile(node('a', 'gRPC C-core linux', 'C-core 29.0.0'));
  assert.equal(clientProfile(node('b', 'gRPC C-core linux', 'C-core 29.0.0')), a, 'matched once per build');
  const newer = clientProfile(node('c', 'gRPC C-core linux', 'C-core 30.0.0'));
  assert.notEqual(newer, a);
  assert.equal(a.key, 'ccore-ring-hash-crash');
  assert.equal(newer.key, '', 'the version is part of what is shared by');
  // One user agent, two kinds: the kind is part of it too.
  const envoy = clientProfile(proxyFromNode({ id: 'e', user_agent_name: 'envoy' }));
  const grpcAsEnvoy = clientProfile(
    proxyFromNode({ id: 'g', user_agent_name: 'envoy', metadata: { GENERATOR: 'grpc' } }),
  );
  assert.deepEqual(
    envoy.rules.map((r) => r.id),
    ['envoy-validate-rules'],
  );
  assert.ok(grpcAsEnvoy.rules.some((r) => r.id === 'grpc-lb-policies'));
});
