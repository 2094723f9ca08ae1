// AuthorizationPolicy (security.istio.io): who may call a workload and what they may ask for, with
// Istio's fields and checks. Unknown fields are errors here: a misspelled `notPrincipals` ignored
// with a warning would widen the rule. CUSTOM (an external authorizer) and targetRefs (Gateway API
// gateways and waypoints) have nothing to attach to on VMs and are refused with the reason.
import type {
  AuthorizationAction,
  AuthorizationCondition,
  AuthorizationPolicySpec,
} from '../../mesh/security-types.js';
import type { FieldPath } from '../parse.js';
import { stringMap } from './common.js';
import { arrayOf, isRecord, obj, oneOf, str, type Check, type Problems } from './schema.js';
import {
  cidr,
  hostPattern,
  isHeaderName,
  methodPattern,
  namespacePattern,
  pathPattern,
  portString,
  principal,
  requestPrincipal,
  serviceAccount,
} from './security-values.js';

const selectorLabels = obj({ matchLabels: stringMap }, { message: 'security.WorkloadSelector' });

/**
 * A security policy's `selector`, as Istio reads it: labels without `*` and with a key; without
 * labels (`selector: {}`) it selects the whole namespace, as no selector does (Istio warns).
 */
export const workloadSelector: Check<{ matchLabels: Record<string, string> }> = (value, path, problems) => {
  const checked = selectorLabels(value, path, problems);
  if (checked === undefined) return undefined;
  const labels = checked.matchLabels ?? {};
  for (const [k, v] of Object.entries(labels)) {
    if (k === '' || k.includes('*') || v.includes('*'))
      problems.error(
        [...path, 'matchLabels', k],
        `${JSON.stringify(`${k}=${v}`)}: a selector label has a key and no wildcard`,
      );
  }
  if (Object.keys(labels).length === 0) {
    problems.warn(path, 'no labels: the policy applies to every workload of the namespace');
    return undefined;
  }
  return { matchLabels: labels };
};

const ACTIONS: readonly AuthorizationAction[] = ['ALLOW', 'DENY', 'AUDIT', 'CUSTOM'];

const values = <T>(check: Check<T>): Check<T[]> => arrayOf(check, { nonEmpty: true });

const SOURCE_SHAPE = {
  principals: values(principal),
  notPrincipals: values(principal),
  requestPrincipals: values(requestPrincipal),
  notRequestPrincipals: values(requestPrincipal),
  namespaces: values(namespacePattern),
  notNamespaces: values(namespacePattern),
  serviceAccounts: values(serviceAccount),
  notServiceAccounts: values(serviceAccount),
  ipBlocks: values(cidr),
  notIpBlocks: values(cidr),
  remoteIpBlocks: values(cidr),
  notRemoteIpBlocks: values(cidr),
};

/**
 * Istio refuses an empty `source` or `operation`. Checked on the raw value: the checked one lacks
 * the fields that failed their own check, which would add a misleading second error.
 */
function nonEmpty<T>(check: Check<T>, what: string): Check<T> {
  return (value, path, problems) => {
    if (isRecord(value) && Object.keys(value).length === 0) {
      problems.error(path, `must set at least one field (Istio refuses an empty ${what})`);
      return undefined;
    }
    return check(value, path, problems);
  };
}

const source = nonEmpty(
  obj(SOURCE_SHAPE, {
    message: 'Source',
    refine: (s, path, problems) => {
      // Istio: service accounts name the identity already; mixing them with principals or namespaces is refused.
      const sa = s.serviceAccounts ?? s.notServiceAccounts;
      const other = ['principals', 'notPrincipals', 'namespaces', 'notNamespaces'].filter(
        (k) => (s as Record<string, unknown>)[k] !== undefined,
      );
      if (sa && other.length > 0)
        problems.error(path, `serviceAccounts cannot be combined with ${other.join(', ')}`);
    },
  }),
  'source',
);

const operation = nonEmpty(
  obj(
    {
      hosts: values(hostPattern),
      notHosts: values(hostPattern),
      ports: values(portString),
      notPorts: values(portString),
      methods: values(methodPattern),
      notMethods: values(methodPattern),
      paths: values(pathPattern),
      notPaths: values(pathPattern),
    },
    { message: 'Operation' },
  ),
  'operation',
);

/** The `when` keys Istio defines and Portolan renders, with the check for their values. */
const CONDITION_KEYS: Readonly<Record<string, Check<string>>> = {
  'source.ip': cidr,
  'remote.ip': cidr,
  'destination.ip': cidr,
  'destination.port': portString,
  'source.namespace': namespacePattern,
  'source.principal': principal,
  'request.auth.principal': requestPrincipal,
  'request.auth.audiences': str({ nonEmpty: true }),
  'request.auth.presenter': str({ nonEmpty: true }),
  'connection.sni': hostPattern,
};

/** `when` keys Istio defines that Portolan does not translate: refused as such, not as unknown. */
const ISTIO_KEYS_NOT_TRANSLATED: readonly string[] = ['source.serviceAccount', 'source.trustDomain'];

/** `request.headers[NAME]`, `request.auth.claims[NAME]` or `request.auth.claims[a][b]` (nested). */
function bracketKey(key: string): { kind: 'header' | 'claim'; names: string[] } | undefined {
  for (const [prefix, kind] of [
    ['request.headers', 'header'],
    ['request.auth.claims', 'claim'],
  ] as const) {
    if (!key.startsWith(prefix)) continue;
    const rest = key.slice(prefix.length);
    const names = [...rest.matchAll(/\[([^[\]]+)\]/g)].map((m) => m[1] ?? '');
    if (names.join('') === '' || names.map((n) => `[${n}]`).join('') !== rest) return undefined;
    if (kind === 'header' && (names.length !== 1 || !isHeaderName(names[0] ?? ''))) return undefined;
    return { kind, names };
  }
  return undefined;
}

/** The value check for a condition key, or a reason the key is refused. */
export function conditionKey(key: string): { check: Check<string> } | { reason: string } {
  const fixed = CONDITION_KEYS[key];
  if (fixed) return { check: fixed };
  const bracketed = bracketKey(key);
  if (bracketed) return { check: str({ nonEmpty: true }) };
  if (key.startsWith('request.headers') || key.startsWith('request.auth.claims'))
    return { reason: `${key}: write request.headers[NAME] or request.auth.claims[NAME] (nested: [a][b])` };
  if (ISTIO_KEYS_NOT_TRANSLATED.includes(key))
    return {
      reason: `${key}: an Istio key Portolan does not support (not translated; use source.principal)`,
    };
  if (key.startsWith('experimental.envoy.filters.'))
    return { reason: 'experimental.envoy.filters.* reads Envoy-internal metadata: not supported' };
  return {
    reason: `unknown key ${JSON.stringify(key)}: one of ${[...Object.keys(CONDITION_KEYS), 'request.headers[NAME]', 'request.auth.claims[NAME]'].join(', ')}`,
  };
}

const condition: Check<AuthorizationCondition> = (value, path, problems) => {
  if (!isRecord(value)) {
    problems.error(path, 'must be an object with key and values or notValues');
    return undefined;
  }
  const key = typeof value.key === 'string' ? value.key : undefined;
  const known = key === undefined ? undefined : conditionKey(key);
  if (key !== undefined && known && 'reason' in known) problems.error([...path, 'key'], known.reason);
  const valueCheck = known && 'check' in known ? known.check : str({ nonEmpty: true });
  const checked = obj(
    { key: str({ nonEmpty: true }), values: values(valueCheck), notValues: values(valueCheck) },
    {
      required: ['key'],
      message: 'Condition',
      refine: (c, p, pr) => {
        if (
          c.values === undefined &&
          c.notValues === undefined &&
          !pr.errors.some((e) => startsWith(e.path, p))
        )
          pr.error(p, 'needs values or notValues');
      },
    },
  )(value, path, problems);
  return checked;
};

function hasError(problems: Problems, prefix: FieldPath): boolean {
  return problems.errors.some((e) => startsWith(e.path, prefix));
}

function startsWith(path: FieldPath, prefix: FieldPath): boolean {
  return prefix.every((s, i) => path[i] === s);
}

const rule = obj(
  {
    from: arrayOf(obj({ source }, { required: ['source'], message: 'Rule.From' })),
    to: arrayOf(obj({ operation }, { required: ['operation'], message: 'Rule.To' })),
    when: arrayOf(condition),
  },
  {
    message: 'Rule',
    // Istio's "`from` must not be empty" check never fires on YAML: an empty list decodes as an
    // absent field, so Istio reads `from: []` as no condition (issue #45 item 4). So does
    // Portolan, and says so: under ALLOW that admits every source.
    refine: (r, path, problems) => {
      for (const key of ['from', 'to'] as const)
        if (r[key]?.length === 0)
          problems.warn(
            [...path, key],
            `an empty list is read as absent, as Istio reads it: the rule has no \`${key}\` condition`,
          );
    },
  },
);

export const authorizationPolicySpec: Check<AuthorizationPolicySpec> = obj(
  {
    selector: workloadSelector,
    action: oneOf(ACTIONS),
    rules: arrayOf(rule),
  },
  {
    message: 'AuthorizationPolicy',
    refine: (spec, path, problems: Problems) => {
      // Istio: a DENY without rules never triggers; `rules: [{}]` denies every request.
      if (spec.action === 'DENY' && spec.rules === undefined && !hasError(problems, [...path, 'rules']))
        problems.error(
          [...path, 'rules'],
          'is required with action DENY: a DENY policy without rules never applies (add an empty rule `{}` to deny every request)',
        );
      if (spec.action === 'CUSTOM')
        problems.error(
          [...path, 'action'],
          'CUSTOM delegates the decision to an external authorizer (ext_authz), which Portolan does not configure: use ALLOW, DENY or AUDIT',
        );
    },
  },
);
