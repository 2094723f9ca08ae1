// AuthorizationPolicy and RequestAuthentication in the config directory: security.istio.io v1 and
// v1beta1 load into MeshConfig; every problem is an error naming file, line and field path —
// unknown fields included (with a did-you-mean), since an ignored field could widen a policy —
// principals in Istio's form and `*` rules, CIDRs, ports, condition keys and their values, CUSTOM and
// targetRefs refused with the reason; and what a client cannot evaluate is listed for /debug/configz.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import { EMPTY_MESH_CONFIG, nextMeshConfig } from '../../../mesh/mesh-config.js';
import { MeshIndex } from '../../../mesh/mesh-index.js';
import { authzLimitations } from '../../../xds/traffic/authz-limitations.js';

const errorsOf = (text: string): string[] =>
  loadConfigFile('authz.yaml', text).errors.map((e) => formatIssue('authz.yaml', e));

const header = (kind: string, name = 'p') => [
  `apiVersion: security.istio.io/v1`,
  `kind: ${kind}`,
  `metadata: {name: ${name}, namespace: shop}`,
];

test('v1 and v1beta1 policies load, merge into MeshConfig and are indexed; an edit moves the generation', () => {
  const text = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: a, namespace: shop}
spec: {}
---
apiVersion: security.istio.io/v1beta1
kind: AuthorizationPolicy
metadata: {name: b, namespace: shop}
spec:
  selector: {matchLabels: {app: payments}}
  action: DENY
  rules:
    - from: [{source: {ipBlocks: [10.0.0.0/8], principals: ["*"]}}]
      to: [{operation: {ports: [8080, "9090"], methods: [GET]}}]
      when: [{key: "request.headers[X-Id]", values: ["a*"]}]
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: istio-system}
spec:
  jwtRules: [{issuer: iss, jwksUri: "https://keys.example.com/jwks"}]
`;
  const load = loadConfigFile('authz.yaml', text);
  assert.deepEqual([load.errors, load.warnings], [[], []]);
  const mesh = nextMeshConfig(EMPTY_MESH_CONFIG, mergeFiles([load]));
  assert.equal(mesh.generation, 1);
  assert.deepEqual(
    mesh.authorizationPolicies.map((p) => [p.apiVersion, p.name, p.line]),
    [
      ['security.istio.io/v1', 'a', 1],
      ['security.istio.io/v1beta1', 'b', 6],
    ],
  );
  assert.deepEqual(mesh.authorizationPolicies[1]?.spec.rules?.[0]?.to?.[0]?.operation.ports, [
    '8080',
    '9090',
  ]);
  const index = new MeshIndex(mesh);
  const names = (labels: Record<string, string>, namespace = 'shop') =>
    index.authorization.policiesFor({ namespace, labels }).map((p) => p.name);
  assert.deepEqual(names({ app: 'payments' }), ['a', 'b']);
  assert.deepEqual(names({ app: 'ledger' }), ['a']);
  assert.deepEqual(names({ app: 'payments' }, 'other'), []);
  assert.deepEqual(
    index.authorization.requestAuthenticationsFor({ namespace: 'other', labels: {} }).map((r) => r.name),
    ['jwt'],
    'root namespace: mesh-wide',
  );
  const edited = loadConfigFile('authz.yaml', text.replace('action: DENY', 'action: AUDIT'));
  assert.equal(nextMeshConfig(mesh, mergeFiles([edited])).generation, 2);
  assert.equal(nextMeshConfig(mesh, mergeFiles([load])).generation, 1);
});

test('root-namespace selectors pick workloads in every namespace, in config order (root first)', () => {
  const load = loadConfigFile(
    'authz.yaml',
    [
      'ns: shop, sel: {}',
      'ns: istio-system, sel: {}',
      'ns: istio-system, sel: {app: x}',
      'ns: shop, sel: {app: y}',
    ]
      .map((_, i) => {
        const [ns, sel] = [
          ['shop', ''],
          ['istio-system', ''],
          ['istio-system', 'selector: {matchLabels: {app: x}}'],
          ['shop', 'selector: {matchLabels: {app: y}}'],
        ][i] ?? ['', ''];
        return `apiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: p${i}, namespace: ${ns}}\nspec: {${sel}}\n`;
      })
      .join('---\n'),
  );
  assert.deepEqual(load.errors, []);
  const index = new MeshIndex(nextMeshConfig(EMPTY_MESH_CONFIG, mergeFiles([load])));
  const names = (namespace: string, labels: Record<string, string>) =>
    index.authorization.policiesFor({ namespace, labels }).map((p) => p.name);
  assert.deepEqual(names('shop', { app: 'x' }), ['p1', 'p2', 'p0']);
  assert.deepEqual(names('shop', { app: 'y' }), ['p1', 'p0', 'p3']);
  assert.deepEqual(names('web', { app: 'x' }), ['p1', 'p2']);
  assert.deepEqual(names('istio-system', {}), ['p1']);
});

test('AuthorizationPolicy errors name the line and field, unknown fields included', () => {
  const text = [
    ...header('AuthorizationPolicy'), // 1-3
    'spec:', // 4
    '  action: ALLOW', // 5
    '  rules:', // 6
    '    - from:', // 7
    '        - source:', // 8
    '            principals: ["spiffe://cluster.local/ns/shop/sa/orders", "shop/orders", "cluster.local/ns/*/sa/x"]', // 9
    '            notPrincipal: [x]', // 10
    '            ipBlocks: [10.0.0.0/33]', // 11
    '        - source: {}', // 12
    '      to:', // 13
    '        - operation:', // 14
    '            ports: ["0", 70000, http]', // 15
    '            paths: [health, "/a/{*}"]', // 16
    '      when:', // 17
    '        - {key: request.method, values: [GET]}', // 18
    '        - {key: "request.headers[]", values: [x]}', // 19
    '        - {key: source.ip, values: [not-an-ip]}', // 20
    '        - {key: "experimental.envoy.filters.a[b]", values: [x]}', // 21
    '        - {key: destination.port}', // 22
    '      extra: 1', // 23
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text).sort(), [
    'authz.yaml:10 spec.rules[0].from[0].source.notPrincipal: unknown field (did you mean "notPrincipals"?)',
    'authz.yaml:11 spec.rules[0].from[0].source.ipBlocks[0]: must be an IP address or CIDR, got "10.0.0.0/33"',
    'authz.yaml:12 spec.rules[0].from[1].source: must set at least one field (Istio refuses an empty source)',
    'authz.yaml:15 spec.rules[0].to[0].operation.ports[0]: must be a port number in 1..65535, got "0"',
    'authz.yaml:15 spec.rules[0].to[0].operation.ports[1]: must be a port number in 1..65535, got 70000',
    'authz.yaml:15 spec.rules[0].to[0].operation.ports[2]: must be a port number in 1..65535, got "http"',
    'authz.yaml:16 spec.rules[0].to[0].operation.paths[0]: path "health": must start with /',
    'authz.yaml:16 spec.rules[0].to[0].operation.paths[1]: path templates ({*}, {**}) are not supported, got "/a/{*}"',
    'authz.yaml:18 spec.rules[0].when[0].key: unknown key "request.method": one of source.ip, remote.ip, destination.ip, destination.port, source.namespace, source.principal, request.auth.principal, request.auth.audiences, request.auth.presenter, connection.sni, request.headers[NAME], request.auth.claims[NAME]',
    'authz.yaml:19 spec.rules[0].when[1].key: request.headers[]: write request.headers[NAME] or request.auth.claims[NAME] (nested: [a][b])',
    'authz.yaml:20 spec.rules[0].when[2].values[0]: must be an IP address or CIDR, got "not-an-ip"',
    'authz.yaml:21 spec.rules[0].when[3].key: experimental.envoy.filters.* reads Envoy-internal metadata: not supported',
    'authz.yaml:22 spec.rules[0].when[4]: needs values or notValues',
    'authz.yaml:23 spec.rules[0].extra: unknown field (known here: from, to, when)',
    'authz.yaml:9 spec.rules[0].from[0].source.principals[2]: principal "cluster.local/ns/*/sa/x": a single * only at the start or the end (exact, *, prefix* or *suffix)',
  ]);
});

test('principal patterns: the whole form, a prefix of it or a suffix of it; other forms load with a warning, as Istio takes them', () => {
  const principals = (values: string[]) => {
    const load = loadConfigFile(
      'authz.yaml',
      [
        ...header('AuthorizationPolicy'),
        'spec:',
        '  rules:',
        `    - from: [{source: {principals: ${JSON.stringify(values)}}}]`,
        '',
      ].join('\n'),
    );
    assert.deepEqual(load.errors, []);
    return load.warnings.filter((w) => w.message.startsWith('never matches:'));
  };
  assert.deepEqual(
    principals([
      '*',
      'cluster.local/ns/shop/sa/orders',
      'example.org/ns/a.b_c-d/sa/x_y',
      'cluster.local/ns/shop/*',
      'cluster.local/n*',
      '*/sa/orders',
      '*/ns/shop/sa/orders',
      '*ders',
      '*.local/ns/shop/sa/orders',
    ]),
    [],
  );
  assert.equal(principals(['cluster.local/ns/shop/orders']).length, 1);
  assert.equal(principals(['cluster.local/ns/shop/sa/orders/extra']).length, 1);
  assert.equal(principals(['cluster.local/sa/shop/*']).length, 1);
  assert.equal(principals(['*/ns/shop/xx/orders']).length, 1);
  assert.equal(principals(['Cluster.Local/ns/shop/sa/orders']).length, 1);
  assert.match(
    principals(['spiffe://cluster.local/ns/shop/sa/orders'])[0]?.message ?? '',
    /without spiffe:\/\//,
  );
  assert.equal(principals(['shop/orders']).length, 1);
});

test('CUSTOM, provider and targetRefs are refused with the reason; the envelope refuses unknown fields', () => {
  const text = [
    ...header('AuthorizationPolicy'), // 1-3
    'spec:', // 4
    '  action: CUSTOM', // 5
    '  provider: {name: ext}', // 6
    '  targetRefs: [{kind: Gateway, name: gw}]', // 7
    '  selector: {matchLabels: {app: x}, matchExpressions: []}', // 8
    'extra: 1', // 9
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text).sort(), [
    'authz.yaml:5 spec.action: CUSTOM delegates the decision to an external authorizer (ext_authz), which Portolan does not configure: use ALLOW, DENY or AUDIT',
    'authz.yaml:6 spec.provider: an Istio field Portolan does not support: is for action CUSTOM, which Portolan does not support',
    'authz.yaml:7 spec.targetRefs: an Istio field Portolan does not support: selects Kubernetes Gateway API gateways and waypoints, which Portolan does not serve: use selector.matchLabels with the workload labels',
    'authz.yaml:8 spec.selector.matchExpressions: unknown field (known here: matchLabels)',
    'authz.yaml:9 extra: unknown field (known here: apiVersion, kind, metadata, spec, status)',
  ]);
  assert.deepEqual(
    errorsOf(
      [
        ...header('AuthorizationPolicy'),
        'spec:',
        '  rules:',
        '    - from: [{source: {serviceAccounts: [orders], namespaces: [shop]}}]',
        '',
      ].join('\n'),
    ),
    ['authz.yaml:6 spec.rules[0].from[0].source: serviceAccounts cannot be combined with namespaces'],
  );
});

test('RequestAuthentication errors: issuer, keys, URIs, header names, unknown fields', () => {
  const text = [
    ...header('RequestAuthentication'), // 1-3
    'spec:', // 4
    '  jwtRules:', // 5
    '    - jwksUri: https://keys.example.com/jwks', // 6
    '    - issuer: a', // 7
    '    - {issuer: b, jwks: "{\\"keys\\": []}", jwksUri: "https://x.example.com/k"}', // 8
    '    - {issuer: c, jwksUri: "ftp://x.example.com/k"}', // 9
    '    - {issuer: d, jwks: "not json"}', // 10
    '    - {issuer: e, jwks: "{\\"keys\\": []}", fromHeaders: [{name: "bad header"}], outputPayloadToHeader: ":path"}', // 11
    '    - {issuer: f, jwks: "{\\"keys\\": []}", timeout: 5, forwardOrignalToken: true}', // 12
    '',
  ].join('\n');
  assert.deepEqual(errorsOf(text).sort(), [
    'authz.yaml:10 spec.jwtRules[4].jwks: must be a JWKS JSON document ({"keys": [...]}) or a PEM public key',
    'authz.yaml:11 spec.jwtRules[5].fromHeaders[0].name: must be an HTTP header name, got "bad header"',
    'authz.yaml:11 spec.jwtRules[5].outputPayloadToHeader: must be an HTTP header name, got ":path"',
    'authz.yaml:12 spec.jwtRules[6].forwardOrignalToken: unknown field (did you mean "forwardOriginalToken"?)',
    'authz.yaml:12 spec.jwtRules[6].timeout: must be a duration such as 1.5s or 100ms, got 5',
    'authz.yaml:7 spec.jwtRules[1]: needs jwks or jwksUri: Portolan does not run OpenID discovery from the issuer',
    'authz.yaml:8 spec.jwtRules[2]: only one of jwks, jwksUri may be set',
    'authz.yaml:9 spec.jwtRules[3].jwksUri: must be an http:// or https:// URL, got "ftp://x.example.com/k"',
  ]);
});

test('a broken policy file keeps its last good version: nothing of the edit applies', () => {
  const good = loadConfigFile('authz.yaml', [...header('AuthorizationPolicy'), 'spec: {}', ''].join('\n'));
  const broken = loadConfigFile(
    'authz.yaml',
    [...header('AuthorizationPolicy'), 'spec:', '  rules: [{from: [{source: {principal: [x]}}]}]', ''].join(
      '\n',
    ),
  );
  assert.equal(good.resources.length, 1);
  assert.deepEqual(broken.resources, [], 'a file with an error contributes nothing of its new version');
  assert.equal(broken.errors.length, 1);
});

test('what a client cannot evaluate is listed, with the field path and the effect', () => {
  const text = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: jwt-allow, namespace: shop}
spec:
  rules:
    - from: [{source: {requestPrincipals: ["*"]}}]
      to: [{operation: {methods: [GET]}}]
      when: [{key: connection.sni, values: [a.example.com]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: jwt-deny, namespace: shop}
spec:
  action: DENY
  rules:
    - when: [{key: "request.auth.claims[group]", values: [x]}]
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: audit, namespace: shop}
spec:
  action: AUDIT
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: jwt, namespace: shop}
spec:
  jwtRules: [{issuer: i, jwks: '{"keys": []}'}]
`;
  const load = loadConfigFile('authz.yaml', text);
  assert.deepEqual(load.errors, []);
  const mesh = nextMeshConfig(EMPTY_MESH_CONFIG, mergeFiles([load]));
  assert.deepEqual(
    authzLimitations(mesh).map((l) => `${l.resource} ${l.field} ${l.clients.join(',')}: ${l.reason}`),
    [
      'AuthorizationPolicy/shop/jwt-allow spec.rules[0].from[0].source.requestPrincipals envoy: requestPrincipals: HTTP-only: on a TCP port (network RBAC) this ALLOW rule never matches',
      'AuthorizationPolicy/shop/jwt-allow spec.rules[0].from[0].source.requestPrincipals grpc: requestPrincipals: gRPC servers have no JWT authentication; this ALLOW rule never matches there',
      'AuthorizationPolicy/shop/jwt-allow spec.rules[0].to[0].operation.methods envoy: methods: HTTP-only: on a TCP port (network RBAC) this ALLOW rule never matches',
      'AuthorizationPolicy/shop/jwt-allow spec.rules[0].when[0] grpc: connection.sni: gRPC servers do not see the SNI (gRFC A41); this ALLOW rule never matches there',
      'AuthorizationPolicy/shop/jwt-deny spec.rules[0].when[0] envoy: request.auth.claims[group]: HTTP-only: on a TCP port (network RBAC) the rule applies without it, so it matches more',
      "AuthorizationPolicy/shop/jwt-deny spec.rules[0].when[0] grpc: request.auth.claims[group]: gRPC servers have no JWT authentication; this DENY cannot be rendered: the server's port denies every call (fail closed)",
      'AuthorizationPolicy/shop/audit spec.action grpc: gRPC servers evaluate no shadow rules: AUDIT is not rendered for them',
      'RequestAuthentication/shop/jwt spec.jwtRules grpc: proxyless gRPC has no JWT filter: not rendered for gRPC servers (their calls carry no request principal)',
    ],
  );
});
