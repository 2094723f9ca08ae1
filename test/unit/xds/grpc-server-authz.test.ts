// AuthorizationPolicy on proxyless gRPC servers (gRFC A41 on A36 listeners), decided by gRPC's own
// RBAC engine (@grpc/grpc-js-xds's, as its XdsServer runs it) over the listeners Portolan builds:
// Istio's evaluation (DENY first; any ALLOW policy denies what none allows; `{}` allows all, no rules
// deny all; AUDIT decides nothing), selection (namespace, selector, root namespace mesh-wide), each
// source/operation/condition field, and what gRPC cannot evaluate (JWT attributes: an ALLOW rule
// never matches, a DENY makes the port deny every call). The filters are never optional.
import '../../support/xds-rbac-env.js';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { register } from '@grpc/grpc-js-xds';
import { ListenerResourceType } from '@grpc/grpc-js-xds/build/src/xds-resource-type/listener-resource-type.js';
import { formatTemplateString } from '@grpc/grpc-js-xds/build/src/xds-bootstrap.js';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { EMPTY_MESH_CONFIG, nextMeshConfig, type MeshConfig } from '../../../mesh/mesh-config.js';
import { buildCatalog } from '../../../model/catalog.js';
import { grpcListenerGenerator } from '../../../xds/generators/grpc/listener.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../../../xds/generators/grpc/server-listener.js';
import { generateContext } from '../../../xds/generators/serving-view.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { LISTENER } from '../../../xds/proto/type-urls.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { serverRbac, type CallInfo, type ServerRbac } from '../../support/grpc-rbac-engine.js';
import { authzExampleFiles, loadAuthzExample } from '../../support/authz-fixture-mesh.js';

register();

const NAME = formatTemplateString(GRPC_SERVER_LISTENER_TEMPLATE, '10.1.0.1:7070');
const id = (sa: string, ns = 'shop'): string => `spiffe://cluster.local/ns/${ns}/sa/${sa}`;
const CHARGE = '/shop.Payments/Charge';
const REFUND = '/shop.Payments/Refund';

let mesh: MeshConfig = EMPTY_MESH_CONFIG;
function config(yaml: string): MeshConfig {
  const load = loadConfigFile('authz.yaml', yaml);
  assert.deepEqual(
    load.errors.map((e) => formatIssue('authz.yaml', e)),
    [],
  );
  mesh = nextMeshConfig(mesh, mergeFiles([load]));
  return mesh;
}

function policy(name: string, spec: string, namespace = 'shop'): string {
  return `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: ${name}, namespace: ${namespace}}
spec: ${spec}
---
`;
}

/** The server listener of a payments server (NAMESPACE shop, LABELS app=payments) under `meshConfig`. */
function listenerFor(meshConfig: MeshConfig, labels: Record<string, string> = { app: 'payments' }) {
  const proxy = proxyFromNode({
    id: 'payments-1',
    user_agent_name: 'gRPC Node Pure JS',
    metadata: { NAMESPACE: 'shop', LABELS: labels },
  });
  const ctx = generateContext({ proxy, catalog: buildCatalog([], new Map()), config: meshConfig });
  const listener = grpcListenerGenerator.build(ctx, NAME);
  assert.ok(listener);
  return listener;
}

function rbacOf(yaml: string, labels?: Record<string, string>): ServerRbac {
  return serverRbac(listenerFor(config(yaml), labels));
}

const call = (path: string, peer?: string, extra: Partial<CallInfo> = {}): CallInfo => ({
  path,
  ...(peer !== undefined && { peer }),
  ...extra,
});

test('no policy: no RBAC filter at all; a policy for other labels or another namespace changes nothing', () => {
  assert.deepEqual(rbacOf('').filters, []);
  const other = rbacOf(policy('x', '{selector: {matchLabels: {app: ledger}}}') + policy('y', '{}', 'other'));
  assert.deepEqual(other.filters, []);
});

test('deny-all (no rules) refuses everything; `rules: [{}]` allows everything', () => {
  const denyAll = rbacOf(policy('deny-all', '{}'));
  assert.deepEqual(denyAll.filters, ['portolan.authz.allow']);
  assert.equal(denyAll.allows(call(CHARGE, id('orders'))), false);
  assert.equal(denyAll.allows(call(CHARGE)), false);
  const allowAll = rbacOf(policy('open', '{rules: [{}]}'));
  assert.equal(allowAll.allows(call(CHARGE, id('orders'))), true);
  assert.equal(allowAll.allows(call(CHARGE)), true);
  const denyEverything = rbacOf(
    policy('open', '{rules: [{}]}') + policy('closed', '{action: DENY, rules: [{}]}'),
  );
  assert.deepEqual(denyEverything.filters, ['portolan.authz.deny', 'portolan.authz.allow']);
  assert.equal(denyEverything.allows(call(CHARGE, id('orders'))), false);
  // A DENY policy without rules is rejected at load, as Istio rejects it (validate-istio-api.test.ts).
});

test('ALLOW by principal: that identity only; others and plaintext callers are refused', () => {
  const rbac = rbacOf(
    policy(
      'from-orders',
      '{selector: {matchLabels: {app: payments}}, rules: [{from: [{source: {principals: [cluster.local/ns/shop/sa/orders]}}]}]}',
    ),
  );
  assert.equal(rbac.allows(call(CHARGE, id('orders'))), true);
  assert.equal(rbac.allows(call(CHARGE, id('batch'))), false);
  assert.equal(rbac.allows(call(CHARGE, id('orders', 'other'))), false);
  assert.equal(rbac.allows(call(CHARGE)), false);
});

test('DENY is evaluated before ALLOW, and an ALLOW policy denies what no ALLOW policy allows', () => {
  const rbac = rbacOf(
    policy(
      'from-orders',
      '{rules: [{from: [{source: {principals: ["cluster.local/ns/shop/sa/orders", "cluster.local/ns/shop/sa/refunds"]}}]}]}',
    ) +
      policy(
        'refund-guard',
        `{action: DENY, rules: [{from: [{source: {notPrincipals: [cluster.local/ns/shop/sa/refunds]}}], to: [{operation: {paths: ["${REFUND}"]}}]}]}`,
      ),
  );
  assert.equal(rbac.allows(call(CHARGE, id('orders'))), true, 'allowed, not denied');
  assert.equal(rbac.allows(call(REFUND, id('orders'))), false, 'allowed, but denied first');
  assert.equal(rbac.allows(call(REFUND, id('refunds'))), true, 'not denied, allowed');
  assert.equal(rbac.allows(call(CHARGE, id('batch'))), false, 'not denied, not allowed');
});

test('only DENY policies: what they do not match is allowed (no ALLOW policy applies)', () => {
  const rbac = rbacOf(
    policy('no-refund', `{action: DENY, rules: [{to: [{operation: {paths: ["${REFUND}"]}}]}]}`),
  );
  assert.deepEqual(rbac.filters, ['portolan.authz.deny']);
  assert.equal(rbac.allows(call(CHARGE)), true);
  assert.equal(rbac.allows(call(REFUND, id('orders'))), false);
});

test('root-namespace policies apply mesh-wide; a root selector picks workloads in every namespace', () => {
  const wide = rbacOf(policy('mesh-deny-all', '{}', 'istio-system'));
  assert.equal(wide.allows(call(CHARGE, id('orders'))), false);
  const selected = rbacOf(
    policy('payments-only', '{selector: {matchLabels: {app: payments}}}', 'istio-system'),
  );
  assert.equal(selected.allows(call(CHARGE, id('orders'))), false);
  assert.deepEqual(
    rbacOf(policy('payments-only', '{selector: {matchLabels: {app: payments}}}', 'istio-system'), {
      app: 'x',
    }).filters,
    [],
  );
});

test('namespaces, service accounts, IP blocks, ports, hosts, methods, headers and conditions', () => {
  const by = (spec: string): ServerRbac => rbacOf(policy('p', spec));
  const ns = by('{rules: [{from: [{source: {namespaces: ["sh*"], notNamespaces: [shadow]}}]}]}');
  assert.equal(ns.allows(call(CHARGE, id('any'))), true);
  assert.equal(ns.allows(call(CHARGE, id('any', 'shadow'))), false);
  assert.equal(ns.allows(call(CHARGE, id('any', 'other'))), false);
  const sa = by('{rules: [{from: [{source: {serviceAccounts: [orders, other/batch]}}]}]}');
  assert.equal(sa.allows(call(CHARGE, id('orders'))), true);
  assert.equal(sa.allows(call(CHARGE, id('batch', 'other'))), true);
  assert.equal(sa.allows(call(CHARGE, id('batch'))), false);
  const ip = by('{rules: [{from: [{source: {ipBlocks: [10.9.0.0/16], notIpBlocks: [10.9.9.9]}}]}]}');
  assert.equal(ip.allows(call(CHARGE, undefined, { sourceIp: '10.9.0.1' })), true);
  assert.equal(ip.allows(call(CHARGE, undefined, { sourceIp: '10.9.9.9' })), false);
  assert.equal(ip.allows(call(CHARGE, undefined, { sourceIp: '10.8.0.1' })), false);
  const op = by(
    '{rules: [{to: [{operation: {ports: ["7070"], methods: [POST], hosts: ["payments.shop.internal*"], paths: ["/shop.Payments/*"], notPaths: ["*/Refund"]}}]}]}',
  );
  assert.equal(op.allows(call(CHARGE)), true);
  assert.equal(op.allows(call(REFUND)), false);
  assert.equal(op.allows(call(CHARGE, undefined, { destinationPort: 7071 })), false);
  assert.equal(op.allows(call(CHARGE, undefined, { authority: 'other:7070' })), false);
  const when = by(
    '{rules: [{when: [{key: "request.headers[x-tenant]", values: [acme]}, {key: source.ip, notValues: [10.9.9.9]}, {key: destination.port, values: ["7070"]}, {key: source.principal, values: ["*/sa/orders"]}]}]}',
  );
  assert.equal(when.allows(call(CHARGE, id('orders'), { headers: { 'x-tenant': 'acme' } })), true);
  assert.equal(when.allows(call(CHARGE, id('orders'), { headers: { 'x-tenant': 'other' } })), false);
  assert.equal(when.allows(call(CHARGE, id('orders'))), false, 'header absent');
  assert.equal(when.allows(call(CHARGE, id('batch'), { headers: { 'x-tenant': 'acme' } })), false);
  assert.equal(
    when.allows(call(CHARGE, id('orders'), { headers: { 'x-tenant': 'acme' }, sourceIp: '10.9.9.9' })),
    false,
  );
  const principals = by('{rules: [{from: [{source: {principals: ["*"]}}]}]}');
  assert.equal(principals.allows(call(CHARGE, id('anyone'))), true, '* is any authenticated peer');
  assert.equal(principals.allows(call(CHARGE)), false, 'plaintext has no principal');
});

test('JWT attributes on gRPC: an ALLOW rule with them never matches; a DENY with them denies every call', () => {
  const allow = rbacOf(
    policy(
      'jwt',
      '{rules: [{from: [{source: {requestPrincipals: ["*"]}}]}, {from: [{source: {principals: [cluster.local/ns/shop/sa/orders]}}]}]}',
    ),
  );
  assert.equal(allow.allows(call(CHARGE, id('orders'))), true, 'the other rule still allows');
  assert.equal(allow.allows(call(CHARGE, id('batch'))), false);
  const deny = rbacOf(
    policy(
      'jwt-deny',
      `{action: DENY, rules: [{to: [{operation: {paths: ["${REFUND}"]}}], when: [{key: "request.auth.claims[group]", values: [interns]}]}]}`,
    ) + policy('open', '{rules: [{}]}'),
  );
  assert.deepEqual(deny.filters, ['portolan.authz.deny']);
  assert.equal(deny.allows(call(CHARGE, id('orders'))), false, 'fail closed: the whole port');
  const decoded = decodeAny(LISTENER, listenerFor(mesh).value);
  assert.match(JSON.stringify(decoded), /portolan-fail-closed/);
});

test('AUDIT is not rendered for gRPC servers (no shadow rules); it changes no decision', () => {
  const rbac = rbacOf(policy('audit', '{action: AUDIT, rules: [{}]}'));
  assert.deepEqual(rbac.filters, []);
  assert.equal(rbac.allows(call(CHARGE)), true);
});

test('the listeners pass Envoy validation and grpc-js accepts them; the RBAC filters are never optional', () => {
  const files = authzExampleFiles();
  let allExamples = EMPTY_MESH_CONFIG;
  allExamples = nextMeshConfig(allExamples, mergeFiles(files.map(loadAuthzExample)));
  const listener = listenerFor({ ...allExamples, generation: 10_000 });
  assert.deepEqual(validateEncoded('envoy.config.listener.v3.Listener', listener.value), []);
  const context = { bootstrap: {} } as unknown as Parameters<ListenerResourceType['decode']>[0];
  assert.equal(
    ListenerResourceType.get().decode(context, { type_url: LISTENER, value: listener.value }).error,
    undefined,
  );
  const hcm = JSON.stringify(decodeAny(LISTENER, listener.value));
  assert.doesNotMatch(hcm, /is_optional/);
  const rbac = serverRbac(listener);
  assert.deepEqual(rbac.filters, ['portolan.authz.deny', 'portolan.authz.allow']);
  // The cookbook's payments policies: orders and billing's two methods; Refund for refunds only (and
  // refunds has no ALLOW), everything else refused.
  assert.equal(rbac.allows(call(CHARGE, id('orders'))), true);
  assert.equal(rbac.allows(call('/shop.Payments/GetStatus', id('billing'))), true);
  assert.equal(rbac.allows(call(REFUND, id('billing'))), false);
  assert.equal(rbac.allows(call(REFUND, id('orders'))), false);
  assert.equal(rbac.allows(call(CHARGE, id('batch'))), false);
});
