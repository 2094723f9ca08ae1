// `from: []` and `to: []` in an AuthorizationPolicy rule (issue #45, item 4) are read as absent, as
// Istio reads them: the RBAC Portolan renders for Envoy and gRPC never has an empty principals or
// permissions list (Envoy's validation rules refuse one: min_items 1, and the listener is NACKed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import { mergeFiles } from '../../../config-dir/merge.js';
import type { AuthorizationPolicyResource } from '../../../mesh/types.js';
import { portAuthz, type AuthzTarget } from '../../../xds/traffic/authz-rbac.js';
import { validateObject } from '../../../xds/validate/pgv-validator.js';

function policies(yaml: string): readonly AuthorizationPolicyResource[] {
  const load = loadConfigFile('authz.yaml', yaml);
  assert.deepEqual(
    load.errors.map((e) => formatIssue('authz.yaml', e)),
    [],
  );
  return mergeFiles([load]).authorizationPolicies;
}

const POLICY = (action: string): string => `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: { name: empty, namespace: shop }
spec:
  action: ${action}
  rules:
    - from: []
      to:
        - operation: { paths: [/admin*] }
    - from:
        - source: { principals: [cluster.local/ns/shop/sa/batch] }
      to: []
    - from: []
      to: []
`;

const TARGETS: readonly AuthzTarget[] = ['envoy-http', 'envoy-tcp', 'grpc'];

for (const action of ['DENY', 'ALLOW', 'AUDIT'])
  for (const target of TARGETS)
    test(`${action} on ${target}: no empty principals or permissions, and Envoy's rules accept it`, () => {
      const authz = portAuthz(policies(POLICY(action)), target);
      const rbacs = [authz.audit, authz.deny, authz.allow].filter((r) => r !== undefined);
      assert.ok(rbacs.length > 0 || target === 'grpc', 'something is rendered');
      for (const rbac of rbacs) {
        for (const [name, p] of Object.entries(rbac.policies ?? {})) {
          assert.ok((p.principals?.length ?? 0) > 0, `${name}: principals`);
          assert.ok((p.permissions?.length ?? 0) > 0, `${name}: permissions`);
        }
        assert.deepEqual(validateObject('envoy.config.rbac.v3.RBAC', rbac), []);
      }
    });

const ABSENT = `apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: { name: empty, namespace: shop }
spec:
  action: DENY
  rules:
    - to:
        - operation: { paths: [/admin*] }
    - from:
        - source: { principals: [cluster.local/ns/shop/sa/batch] }
    - {}
`;

test('`from: []` renders as `from` absent, `to: []` as `to` absent', () => {
  for (const target of TARGETS)
    assert.deepEqual(
      portAuthz(policies(POLICY('DENY')), target),
      portAuthz(policies(ABSENT), target),
      target,
    );
});
