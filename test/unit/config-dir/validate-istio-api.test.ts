// The Istio API table (config-dir/validate/istio-api.ts) is the schema: every field Istio defines
// is known — translated, ignored with a warning naming it (networking), or refused as not
// supported (security) — and the verdicts follow Istio's validation where it warns or rejects.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { ISTIO_API } from '../../../config-dir/validate/istio-api.js';

function verdict(text: string): { errors: string[]; warnings: string[] } {
  const load = loadConfigFile('f.yaml', text);
  return {
    errors: load.errors.map((e) => formatIssue('f.yaml', e)),
    warnings: load.warnings.map((e) => formatIssue('f.yaml', e)),
  };
}

const doc = (apiVersion: string, kind: string, spec: string): string =>
  `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata: {name: x, namespace: shop}\nspec:\n${spec}\n`;
const security = (kind: string, spec: string): string => doc('security.istio.io/v1', kind, spec);
const networking = (kind: string, spec: string): string => doc('networking.istio.io/v1', kind, spec);

test('security messages ignore nothing: each of their fields is translated or refused', () => {
  const security = new Set(['AuthorizationPolicy', 'PeerAuthentication', 'RequestAuthentication']);
  for (const [name, message] of Object.entries(ISTIO_API)) {
    if (!security.has(message.kind)) continue;
    for (const [field, spec] of Object.entries(message.fields))
      assert.notEqual(spec.status, 'ignored', `${name}.${field}`);
  }
});

test('AuthorizationPolicy source.trustDomains: an Istio field, refused as not supported (not "unknown")', () => {
  const v = verdict(
    security(
      'AuthorizationPolicy',
      '  rules: [{from: [{source: {trustDomains: [td], notTrustDomains: [x]}}]}]',
    ),
  );
  assert.equal(v.errors.length, 2);
  for (const e of v.errors) assert.match(e, /an Istio field Portolan does not support/);
  const keys = verdict(
    security(
      'AuthorizationPolicy',
      '  rules: [{when: [{key: source.trustDomain, values: [td]}, {key: source.serviceAccount, values: [a]}]}]',
    ),
  );
  assert.equal(keys.errors.length, 2);
  for (const e of keys.errors) assert.match(e, /an Istio key Portolan does not support/);
});

test('Istio fields a networking validator does not render are warnings naming them', () => {
  const v = verdict(
    networking(
      'DestinationRule',
      '  host: a.example.com\n  trafficPolicy:\n    connectionPool: {http: {http2KeepAlive: {interval: 1s}}}\n    loadBalancer: {zoneAwareLbSetting: {enabled: true}, warmup: {duration: 10s}}',
    ),
  );
  assert.deepEqual(v.errors, []);
  assert.deepEqual(v.warnings.map((w) => w.split(': ')[0]).sort(), [
    'f.yaml:7 spec.trafficPolicy.connectionPool.http.http2KeepAlive',
    'f.yaml:8 spec.trafficPolicy.loadBalancer.warmup',
    'f.yaml:8 spec.trafficPolicy.loadBalancer.zoneAwareLbSetting',
  ]);
  // Their values are still checked where Istio's schema checks them.
  assert.match(
    verdict(
      networking(
        'DestinationRule',
        '  host: a.example.com\n  trafficPolicy: {loadBalancer: {warmup: {minimumPercent: 5}}}',
      ),
    ).errors.join('\n'),
    /warmup\.duration: is required/,
  );
});

test('VirtualService delegate: refused as not supported, without a misleading "needs a route"', () => {
  const v = verdict(networking('VirtualService', '  hosts: [a]\n  http: [{delegate: {name: b}}]'));
  assert.equal(v.errors.length, 1);
  assert.match(v.errors[0] ?? '', /spec\.http\[0\]\.delegate: an Istio field Portolan does not support/);
});

test('a DENY policy without rules is rejected, as Istio rejects it; rules: [{}] denies everything', () => {
  assert.deepEqual(verdict(security('AuthorizationPolicy', '  action: DENY')).errors, [
    'f.yaml:4 spec.rules: is required with action DENY: a DENY policy without rules never applies (add an empty rule `{}` to deny every request)',
  ]);
  assert.deepEqual(verdict(security('AuthorizationPolicy', '  action: DENY\n  rules: [{}]')).errors, []);
  assert.deepEqual(verdict(security('AuthorizationPolicy', '  action: ALLOW')).errors, []);
});

test('Gateway: duplicate server port names are rejected, as Istio rejects them', () => {
  const v = verdict(
    networking(
      'Gateway',
      '  servers:\n  - {port: {number: 80, name: http, protocol: HTTP}, hosts: [a.example.com]}\n  - {port: {number: 81, name: http, protocol: HTTP}, hosts: [b.example.com]}',
    ),
  );
  assert.deepEqual(v.errors, [
    'f.yaml:7 spec.servers[1].port.name: duplicate port name "http": servers[0] has it (port names in servers must be unique)',
  ]);
});

test('RequestAuthentication: jwksUri without issuer loads (any issuer, as Istio); http:// jwksUri warns', () => {
  const v = verdict(
    security('RequestAuthentication', '  jwtRules: [{jwksUri: "http://keys.example.com/jwks"}]'),
  );
  assert.deepEqual(v.errors, []);
  assert.equal(v.warnings.length, 1);
  assert.match(v.warnings[0] ?? '', /jwtRules\[0\]\.jwksUri: http:\/\/ fetches the JWKS without TLS/);
  const load = loadConfigFile(
    'f.yaml',
    security('RequestAuthentication', '  jwtRules: [{jwksUri: "https://k.example.com/j"}]'),
  );
  assert.deepEqual(load.warnings, []);
  const spec = load.resources[0]?.spec as { jwtRules?: { issuer: string }[] } | undefined;
  assert.equal(spec?.jwtRules?.[0]?.issuer, '');
  assert.match(
    verdict(security('RequestAuthentication', '  jwtRules: [{audiences: [a]}]')).errors.join(),
    /issuer: is required unless jwksUri is set/,
  );
});

test('WorkloadGroup: a template without serviceAccount loads with a warning naming the risk', () => {
  const v = verdict(networking('WorkloadGroup', '  template: {labels: {app: a}}'));
  assert.deepEqual(v.errors, []);
  assert.equal(v.warnings.length, 1);
  assert.match(
    v.warnings[0] ?? '',
    /template\.serviceAccount: not set: a VM registering under any service account/,
  );
  assert.deepEqual(verdict(networking('WorkloadGroup', '  template: {serviceAccount: a}')).warnings, []);
});

test('security selectors: no labels is the whole namespace (a warning), a wildcard label is refused', () => {
  const empty = loadConfigFile(
    'f.yaml',
    security('PeerAuthentication', '  selector: {}\n  mtls: {mode: STRICT}'),
  );
  assert.deepEqual(empty.errors, []);
  assert.match(empty.warnings[0]?.message ?? '', /every workload of the namespace/);
  assert.equal((empty.resources[0]?.spec as { selector?: unknown }).selector, undefined);
  assert.match(
    verdict(security('AuthorizationPolicy', '  selector: {matchLabels: {app: "*"}}')).errors.join(),
    /no wildcard/,
  );
  assert.match(
    verdict(security('PeerAuthentication', '  portLevelMtls: {}')).errors.join(),
    /must not be empty/,
  );
});

test('ServiceEntry workloadSelector: {} is accepted as Istio accepts it, with a warning that it selects nothing', () => {
  const v = verdict(
    networking(
      'ServiceEntry',
      '  hosts: [a.example.com]\n  ports: [{number: 80, name: http}]\n  workloadSelector: {}',
    ),
  );
  assert.deepEqual(v.errors, []);
  assert.match(v.warnings.join('\n'), /selects no WorkloadEntry/);
});
