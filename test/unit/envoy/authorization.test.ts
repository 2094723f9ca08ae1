// AuthorizationPolicy and RequestAuthentication in Envoy's inbound chains: the HTTP connection
// manager gets jwt_authn then the RBAC filters (audit as shadow rules, deny, allow) before the
// router; TCP chains and the passthrough chain the RBAC network filters before tcp_proxy; gateways
// the same on their chains, with a cluster per JWKS host. HTTP-only attributes on a TCP chain: an
// ALLOW rule using them is left out, a DENY rule applies without them (Istio). Every resource passes
// Envoy's (validate.rules) and each set the consistency check, which also checks the JWKS clusters.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import { SYSTEM_CA_BUNDLE } from '../../../xds/generators/envoy/jwks-clusters.js';
import { CLUSTER, LISTENER, TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { checkConsistency } from '../../../xds/validate/consistency.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import {
  authzFixtureCatalog,
  authzFixtureConfig,
  INGRESS_LABELS,
  LEDGER_IP,
  PAYMENTS_IP,
} from '../../support/authz-fixture-mesh.js';
import { at, list } from './at.js';
import { collect, decodedByName, envoyProxy, type Collected } from './fixture-mesh.js';

const catalog = authzFixtureCatalog();
let generation = 0;

/** The fixture mesh (gateway, mTLS) with exactly these policies. */
function meshWith(yaml: string): MeshConfig {
  const load = loadConfigFile('authz.yaml', yaml);
  assert.deepEqual(
    load.errors.map((e) => formatIssue('authz.yaml', e)),
    [],
  );
  const merged = mergeFiles([load]);
  return {
    ...authzFixtureConfig(++generation, []),
    authorizationPolicies: merged.authorizationPolicies,
    requestAuthentications: merged.requestAuthentications,
  };
}

const payments = (metadata: Record<string, unknown> = {}) =>
  envoyProxy(`sidecar~${PAYMENTS_IP}~payments-1~shop.svc`, {
    NAMESPACE: 'shop',
    LABELS: { app: 'payments' },
    INTERCEPTION_MODE: 'REDIRECT',
    ...metadata,
  });
const ledger = envoyProxy('ledger-1', {
  NAMESPACE: 'shop',
  INSTANCE_IPS: LEDGER_IP,
  LABELS: { app: 'ledger' },
});
const gateway = envoyProxy('router~10.1.9.9~ingress-1~istio-system.svc', {
  NAMESPACE: 'istio-system',
  LABELS: INGRESS_LABELS,
});

function checked(collected: Collected): Collected {
  for (const [typeUrl, resources] of collected)
    for (const r of resources)
      assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], r.name);
  assert.deepEqual(checkConsistency(collected), []);
  return collected;
}

type Obj = Record<string, unknown>;

/** The filter chains of a listener, by name. */
function chains(collected: Collected, listener: string): Obj[] {
  const l = decodedByName(collected, LISTENER).get(listener);
  assert.ok(l, `listener ${listener}`);
  return [
    ...list(l, 'filter_chains'),
    ...(at(l, 'default_filter_chain') ? [at(l, 'default_filter_chain')] : []),
  ] as Obj[];
}

const httpFilterNames = (chain: Obj): string[] =>
  list(chain, 'filters[0].typed_config.http_filters').map((f) => String(at(f, 'name')));
const networkFilterNames = (chain: Obj): string[] => list(chain, 'filters').map((f) => String(at(f, 'name')));
const rbac = (chain: Obj, name: string, http: boolean): Obj | undefined => {
  const filters = http ? list(chain, 'filters[0].typed_config.http_filters') : list(chain, 'filters');
  return at(
    filters.find((f) => at(f, 'name') === name),
    'typed_config',
  ) as Obj | undefined;
};
const policyNames = (config: Obj | undefined, rules = 'rules'): string[] =>
  Object.keys((at(config, `${rules}.policies`) as Obj | undefined) ?? {}).sort();
/** One RBAC policy by name (its name has brackets, which `at` would read as a path). */
const policy = (config: Obj | undefined, name: string): Obj | undefined =>
  ((at(config, 'rules.policies') as Obj | undefined) ?? {})[name] as Obj | undefined;
/** One jwt_authn provider by name (`NS/NAME[I]`). */
const provider = (config: unknown, name: string): Obj | undefined =>
  ((at(config, 'providers') as Obj | undefined) ?? {})[name] as Obj | undefined;

const POLICIES = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: allow-orders, namespace: shop}
spec:
  rules:
    - from: [{source: {principals: [cluster.local/ns/shop/sa/orders]}}]
    - to: [{operation: {paths: [/health]}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: deny-admin, namespace: shop}
spec:
  action: DENY
  rules:
    - to: [{operation: {ports: ["9999"], paths: [/admin*]}}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: audit-all, namespace: istio-system}
spec:
  action: AUDIT
  rules: [{}]
`;

test('no policy: no authorization filter anywhere (the chains are as before)', () => {
  const c = checked(collect(payments(), catalog, meshWith('')));
  for (const chain of chains(c, 'virtualInbound')) {
    const names = chain.filter_chain_match ? httpFilterNames(chain) : networkFilterNames(chain);
    assert.ok(
      names.every((n) => !n.startsWith('portolan.authz')),
      JSON.stringify(names),
    );
  }
});

test('sidecar HTTP chain: audit (shadow), deny, allow before the router; the passthrough chain as TCP', () => {
  const c = checked(collect(payments(), catalog, meshWith(POLICIES)));
  const [http, passthrough] = chains(c, 'virtualInbound');
  assert.ok(http && passthrough);
  assert.deepEqual(httpFilterNames(http), [
    'portolan.authz.audit',
    'portolan.authz.deny',
    'portolan.authz.allow',
    'envoy.filters.http.router',
  ]);
  const audit = rbac(http, 'portolan.authz.audit', true);
  assert.equal(at(audit, 'rules'), undefined, 'AUDIT enforces nothing');
  assert.deepEqual(policyNames(audit, 'shadow_rules'), ['ns[istio-system]-policy[audit-all]-rule[0]']);
  assert.equal(at(audit, 'shadow_rules_stat_prefix'), 'portolan_audit_');
  assert.deepEqual(policyNames(rbac(http, 'portolan.authz.allow', true)), [
    'ns[shop]-policy[allow-orders]-rule[0]',
    'ns[shop]-policy[allow-orders]-rule[1]',
  ]);
  const deny = rbac(http, 'portolan.authz.deny', true);
  assert.deepEqual(
    at(policy(deny, 'ns[shop]-policy[deny-admin]-rule[0]'), 'permissions[0].and_rules.rules'),
    [{ destination_port: 9999 }, { url_path: { path: { prefix: '/admin' } } }],
  );
  // Undeclared ports pass through under the same policies, evaluated as TCP.
  assert.deepEqual(networkFilterNames(passthrough), [
    'portolan.authz.audit',
    'portolan.authz.deny',
    'portolan.authz.allow',
    'envoy.filters.network.tcp_proxy',
  ]);
});

test('TCP chains: an ALLOW rule with HTTP fields is left out; a DENY rule applies without them', () => {
  const c = checked(collect(ledger, catalog, meshWith(POLICIES)));
  const [tcp] = chains(c, `${LEDGER_IP}_5432`);
  assert.ok(tcp);
  assert.deepEqual(networkFilterNames(tcp), [
    'portolan.authz.audit',
    'portolan.authz.deny',
    'portolan.authz.allow',
    'envoy.filters.network.tcp_proxy',
  ]);
  const allow = rbac(tcp, 'portolan.authz.allow', false);
  assert.equal(at(allow, 'stat_prefix'), 'tcp.');
  assert.deepEqual(
    policyNames(allow),
    ['ns[shop]-policy[allow-orders]-rule[0]'],
    'the /health rule never matches on TCP',
  );
  const deny = rbac(tcp, 'portolan.authz.deny', false);
  assert.deepEqual(at(policy(deny, 'ns[shop]-policy[deny-admin]-rule[0]'), 'permissions'), [
    { destination_port: 9999 },
  ]);
  // The HTTP port of the same workload keeps both ALLOW rules.
  const [http] = chains(c, `${LEDGER_IP}_7070`);
  assert.ok(http);
  assert.equal(policyNames(rbac(http, 'portolan.authz.allow', true)).length, 2);
});

test('PERMISSIVE: the TLS and the plaintext chain carry the same filters', () => {
  const permissive = meshWith(POLICIES);
  const config: MeshConfig = {
    ...permissive,
    peerAuthentications: permissive.peerAuthentications.map((p) => ({
      ...p,
      spec: { mtls: { mode: 'PERMISSIVE' as const } },
    })),
  };
  const c = checked(collect(payments(), catalog, config));
  const http = chains(c, 'virtualInbound').filter((ch) => at(ch, 'filter_chain_match.destination_port'));
  assert.equal(http.length, 2);
  assert.deepEqual(httpFilterNames(http[0] ?? {}), httpFilterNames(http[1] ?? {}));
  assert.ok(httpFilterNames(http[1] ?? {}).includes('portolan.authz.allow'));
});

const JWT = `apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  jwtRules:
    - issuer: https://auth.example.com
      jwksUri: https://auth.example.com:8443/keys
      timeout: 2s
    - issuer: local
      jwks: '{"keys": []}'
      fromHeaders: [{name: x-token}]
      outputClaimToHeaders: [{header: x-user, claim: sub}]
      forwardOriginalToken: true
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: need-jwt, namespace: istio-system}
spec:
  selector: {matchLabels: {istio: ingressgateway}}
  rules:
    - from: [{source: {requestPrincipals: ["https://auth.example.com/*"]}}]
`;

test('gateway: jwt_authn ahead of RBAC on HTTP chains, RBAC on TCP chains, a cluster per JWKS host', () => {
  const c = checked(collect(gateway, catalog, meshWith(JWT)));
  const [http] = chains(c, '0.0.0.0_80');
  assert.ok(http);
  assert.deepEqual(httpFilterNames(http), [
    'envoy.filters.http.jwt_authn',
    'portolan.authz.allow',
    'envoy.filters.http.fault',
    'envoy.filters.http.router',
  ]);
  const jwt = at(list(http, 'filters[0].typed_config.http_filters')[0], 'typed_config');
  const remote = provider(jwt, 'istio-system/jwt[0]');
  assert.deepEqual(at(remote, 'remote_jwks.http_uri'), {
    uri: 'https://auth.example.com:8443/keys',
    cluster: 'jwks|8443||auth.example.com',
    timeout: { seconds: '2', nanos: 0 },
  });
  assert.equal(at(remote, 'payload_in_metadata'), 'payload');
  const local = provider(jwt, 'istio-system/jwt[1]');
  assert.deepEqual(at(local, 'local_jwks'), { inline_string: '{"keys": []}' });
  assert.deepEqual(at(local, 'from_headers'), [{ name: 'x-token' }]);
  assert.deepEqual(at(local, 'claim_to_headers'), [{ header_name: 'x-user', claim_name: 'sub' }]);
  assert.equal(at(local, 'forward'), true);
  assert.deepEqual(list(jwt, 'rules[0].requires.requires_any.requirements'), [
    { provider_name: 'istio-system/jwt[0]' },
    { provider_name: 'istio-system/jwt[1]' },
    { allow_missing: {} },
  ]);
  // The TCP server: network RBAC, where a requestPrincipals rule can never match (HTTP-only).
  const [tcp] = chains(c, '0.0.0.0_5432');
  assert.ok(tcp);
  assert.deepEqual(networkFilterNames(tcp), ['portolan.authz.allow', 'envoy.filters.network.tcp_proxy']);
  assert.deepEqual(policyNames(rbac(tcp, 'portolan.authz.allow', false)), []);

  const jwks = decodedByName(c, CLUSTER).get('jwks|8443||auth.example.com');
  assert.ok(jwks);
  assert.equal(at(jwks, 'type'), 'LOGICAL_DNS');
  assert.deepEqual(at(jwks, 'load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address'), {
    address: 'auth.example.com',
    port_value: 8443,
  });
  const tls = at(jwks, 'transport_socket.typed_config');
  assert.equal(at(tls, 'sni'), 'auth.example.com');
  assert.equal(at(tls, 'common_tls_context.validation_context.trusted_ca.filename'), SYSTEM_CA_BUNDLE);
  assert.deepEqual(at(tls, 'common_tls_context.validation_context.match_typed_subject_alt_names'), [
    { san_type: 'DNS', matcher: { exact: 'auth.example.com' } },
  ]);
  // Sidecars the RequestAuthentication does not select get neither the filter nor the cluster.
  const sidecar = checked(collect(payments(), catalog, meshWith(JWT)));
  assert.equal(decodedByName(sidecar, CLUSTER).has('jwks|8443||auth.example.com'), false);
});

test('the consistency check catches a jwt_authn provider whose JWKS cluster is not served', () => {
  const c = collect(gateway, catalog, meshWith(JWT));
  const withoutJwks = new Map(c);
  withoutJwks.set(
    CLUSTER,
    (c.get(CLUSTER) ?? []).filter((r) => !r.name.startsWith('jwks|')),
  );
  assert.deepEqual(checkConsistency(withoutJwks), [
    'listener 0.0.0.0_80 (jwt_authn istio-system/jwt[0]) names cluster jwks|8443||auth.example.com, which is not served',
  ]);
});

test('every example policy renders valid, consistent config for the sidecars and the gateway', () => {
  const config = authzFixtureConfig(++generation);
  for (const proxy of [payments(), ledger, gateway]) checked(collect(proxy, catalog, config));
});
