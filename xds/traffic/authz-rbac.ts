// AuthorizationPolicies → Envoy RBAC configs, with Istio's semantics, for one inbound port of one
// workload. Evaluation as Istio: a request any DENY policy matches is denied; then, if any ALLOW
// policy applies to the workload, a request none of them matches is denied; AUDIT decides nothing.
// That is three RBAC filters in a row — AUDIT (shadow rules, enforcing nothing), DENY, ALLOW — each
// present only when a policy of its action applies. Within one, every rule of every policy is an
// RBAC policy named as Istio names it, `ns[NS]-policy[NAME]-rule[I]`, matching when some `from`, some
// `to` and every `when` do. A policy without rules gets a policy that matches nothing (so an ALLOW
// one denies everything, as Istio documents); the empty rule `{}` matches everything.
//
// What a port cannot evaluate (HTTP attributes on a TCP chain; JWT attributes and the SNI on a
// proxyless gRPC server, gRFC A41) is handled as Istio handles HTTP attributes on TCP: an ALLOW rule
// using it never matches (it is left out), a DENY or AUDIT rule is kept without it (it matches more).
// Except on gRPC servers, where a DENY that cannot be rendered makes the port deny every call (fail
// closed), and AUDIT is not rendered (gRPC evaluates no shadow rules). authz-limitations.ts lists all
// of these for /debug/configz.
import type { Permission } from '../generated/envoy/config/rbac/v3/Permission.js';
import type { Policy } from '../generated/envoy/config/rbac/v3/Policy.js';
import type { Principal } from '../generated/envoy/config/rbac/v3/Principal.js';
import type { RBAC } from '../generated/envoy/config/rbac/v3/RBAC.js';
import type {
  AuthorizationAction,
  AuthorizationCondition,
  AuthorizationOperation,
  AuthorizationRule,
  AuthorizationSource,
} from '../../mesh/security-types.js';
import type { AuthorizationPolicyResource } from '../../mesh/types.js';
import {
  cidrRange,
  claimMatcher,
  headerMatcher,
  namespaceMatcher,
  principalMatcher,
  requestPrincipalMatchers,
  serviceAccountMatcher,
  stringMatcher,
} from './authz-matchers.js';

/** What evaluates the RBAC: an Envoy HTTP or TCP chain, or a proxyless gRPC server (always HTTP/2). */
export type AuthzTarget = 'envoy-http' | 'envoy-tcp' | 'grpc';

/** The RBAC configs of one port, in the order their filters go (audit, deny, allow). */
export interface PortAuthz {
  /** AUDIT policies, as shadow rules (Envoy only). */
  readonly audit?: RBAC;
  readonly deny?: RBAC;
  readonly allow?: RBAC;
}

/** The name of the policy a gRPC server denies every call with when a DENY cannot be rendered. */
export const FAIL_CLOSED_POLICY = 'portolan-fail-closed';

type EnforcedAction = Exclude<AuthorizationAction, 'CUSTOM'>;

/** The RBAC configs for `policies` (those selecting the workload, in config order) on `target`. */
export function portAuthz(policies: readonly AuthorizationPolicyResource[], target: AuthzTarget): PortAuthz {
  const byAction = (action: EnforcedAction): AuthorizationPolicyResource[] =>
    policies.filter((p) => (p.spec.action ?? 'ALLOW') === action);
  const deny = rbacOf(byAction('DENY'), 'DENY', target);
  if (deny === 'fail-closed')
    return { deny: { action: 'DENY', policies: { [FAIL_CLOSED_POLICY]: MATCH_ALL } } };
  const allow = rbacOf(byAction('ALLOW'), 'ALLOW', target);
  const audit = target === 'grpc' ? undefined : rbacOf(byAction('AUDIT'), 'AUDIT', target);
  return {
    ...(audit && audit !== 'fail-closed' && { audit }),
    ...(deny && { deny }),
    ...(allow && allow !== 'fail-closed' && { allow }),
  };
}

/** Whether nothing applies (no RBAC filter at all). */
export function isEmptyAuthz(authz: PortAuthz): boolean {
  return !authz.audit && !authz.deny && !authz.allow;
}

const MATCH_ALL: Policy = { permissions: [{ any: true }], principals: [{ any: true }] };
const MATCH_NEVER: Policy = {
  permissions: [{ not_rule: { any: true } }],
  principals: [{ not_id: { any: true } }],
};

function rbacOf(
  policies: readonly AuthorizationPolicyResource[],
  action: EnforcedAction,
  target: AuthzTarget,
): RBAC | 'fail-closed' | undefined {
  if (policies.length === 0) return undefined;
  const out: Record<string, Policy> = {};
  for (const p of policies) {
    const rules = p.spec.rules ?? [];
    if (rules.length === 0) out[policyName(p, 0)] = MATCH_NEVER;
    for (const [i, rule] of rules.entries()) {
      const rendered = renderRule(rule, p.namespace, action, target);
      if (rendered === 'fail-closed') return 'fail-closed';
      if (rendered) out[policyName(p, i)] = rendered;
    }
  }
  // AUDIT's RBAC evaluates as DENY in shadow: a request an AUDIT rule matches is "shadow denied"
  // (stat shadow_denied, metadata shadow_effective_policy_id naming the rule) and is let through.
  return { action: action === 'ALLOW' ? 'ALLOW' : 'DENY', policies: out };
}

function policyName(p: AuthorizationPolicyResource, rule: number): string {
  return `ns[${p.namespace}]-policy[${p.name}]-rule[${rule}]`;
}

/** Why a value cannot be evaluated on the target, or undefined when it can. */
type Unsupported = string;

const HTTP_ONLY = 'HTTP-only: not evaluated on a TCP port';
const NO_JWT = 'gRPC servers have no JWT authentication';
const NO_SNI = 'gRPC servers do not see the SNI (gRFC A41)';

interface Term<T> {
  readonly values?: readonly string[];
  readonly notValues?: readonly string[];
  render(value: string): T | Unsupported;
}

/** Renders one rule; undefined when an ALLOW rule can never match on the target. */
function renderRule(
  rule: AuthorizationRule,
  namespace: string,
  action: EnforcedAction,
  target: AuthzTarget,
): Policy | 'fail-closed' | undefined {
  const principalWhen: Term<Principal>[] = [];
  const permissionWhen: Term<Permission>[] = [];
  for (const c of rule.when ?? []) {
    const term = conditionTerm(c, target);
    if (term.side === 'principal') principalWhen.push(term);
    else permissionWhen.push(term);
  }
  const principals: Principal[] = [];
  // An empty `from: []` / `to: []` is read as absent, as Istio reads it: an empty principals or
  // permissions list matches nothing on gRPC (a DENY silently not enforced) and Envoy NACKs it.
  for (const from of nonEmpty(rule.from) ?? [{ source: {} }]) {
    const ids = combine(
      [...sourceTerms(from.source, namespace, target), ...principalWhen],
      action,
      target,
      (ids) => ({ and_ids: { ids } }),
      (ids) => ({ or_ids: { ids } }),
      (p) => ({ not_id: p }),
    );
    if (ids === 'fail-closed' || ids === 'never') return ids === 'fail-closed' ? ids : undefined;
    principals.push(ids ?? { any: true });
  }
  const permissions: Permission[] = [];
  for (const to of nonEmpty(rule.to) ?? [{ operation: {} }]) {
    const rules = combine(
      [...operationTerms(to.operation, target), ...permissionWhen],
      action,
      target,
      (rules) => ({ and_rules: { rules } }),
      (rules) => ({ or_rules: { rules } }),
      (p) => ({ not_rule: p }),
    );
    if (rules === 'fail-closed' || rules === 'never') return rules === 'fail-closed' ? rules : undefined;
    permissions.push(rules ?? { any: true });
  }
  return { permissions, principals };
}

function nonEmpty<T>(list: readonly T[] | undefined): readonly T[] | undefined {
  return list && list.length > 0 ? list : undefined;
}

/**
 * The AND of `terms` (each: any of its values, and none of its notValues). An unsupported value
 * makes an ALLOW rule `never` match; a DENY on gRPC `fail-closed`; otherwise it is dropped.
 * Undefined when nothing is left (matches everything).
 */
function combine<T>(
  terms: readonly Term<T>[],
  action: EnforcedAction,
  target: AuthzTarget,
  and: (list: T[]) => T,
  or: (list: T[]) => T,
  not: (item: T) => T,
): T | 'never' | 'fail-closed' | undefined {
  // One item stands for itself; none is "no constraint" (undefined).
  const join = (list: T[], op: (list: T[]) => T): T | undefined => (list.length <= 1 ? list[0] : op(list));
  const all: T[] = [];
  for (const term of terms) {
    for (const [values, negate] of [
      [term.values, false],
      [term.notValues, true],
    ] as const) {
      if (!values || values.length === 0) continue;
      const rendered: T[] = [];
      for (const v of values) {
        const r = term.render(v);
        if (typeof r !== 'string') {
          rendered.push(r);
          continue;
        }
        if (action === 'ALLOW') return 'never';
        if (action === 'DENY' && target === 'grpc') return 'fail-closed';
      }
      const any = join(rendered, or);
      if (any !== undefined) all.push(negate ? not(any) : any);
    }
  }
  return join(all, and);
}

type SideTerm = (Term<Principal> & { side: 'principal' }) | (Term<Permission> & { side: 'permission' });

function sourceTerms(source: AuthorizationSource, namespace: string, target: AuthzTarget): Term<Principal>[] {
  const authenticated = (m: ReturnType<typeof stringMatcher>): Principal => ({
    authenticated: { principal_name: m },
  });
  const jwt = jwtSupport(target);
  return [
    {
      values: source.principals,
      notValues: source.notPrincipals,
      render: (v) => authenticated(principalMatcher(v)),
    },
    {
      values: source.namespaces,
      notValues: source.notNamespaces,
      render: (v) => authenticated(namespaceMatcher(v)),
    },
    {
      values: source.serviceAccounts,
      notValues: source.notServiceAccounts,
      render: (v) => authenticated(serviceAccountMatcher(v, namespace)),
    },
    {
      values: source.requestPrincipals,
      notValues: source.notRequestPrincipals,
      render: (v) => jwt ?? requestPrincipal(v),
    },
    {
      values: source.ipBlocks,
      notValues: source.notIpBlocks,
      render: (v) => ({ direct_remote_ip: cidrRange(v) }),
    },
    {
      values: source.remoteIpBlocks,
      notValues: source.notRemoteIpBlocks,
      render: (v) => ({ remote_ip: cidrRange(v) }),
    },
  ];
}

function operationTerms(operation: AuthorizationOperation, target: AuthzTarget): Term<Permission>[] {
  const http = target === 'envoy-tcp' ? HTTP_ONLY : undefined;
  return [
    {
      values: operation.hosts,
      notValues: operation.notHosts,
      render: (v) => http ?? { header: headerMatcher(':authority', v, true) },
    },
    {
      values: operation.ports,
      notValues: operation.notPorts,
      render: (v) => ({ destination_port: Number(v) }),
    },
    {
      values: operation.methods,
      notValues: operation.notMethods,
      render: (v) => http ?? { header: headerMatcher(':method', v) },
    },
    {
      values: operation.paths,
      notValues: operation.notPaths,
      render: (v) => http ?? { url_path: { path: stringMatcher(v) } },
    },
  ];
}

function conditionTerm(c: AuthorizationCondition, target: AuthzTarget): SideTerm {
  const values = { values: c.values, notValues: c.notValues };
  const http = target === 'envoy-tcp' ? HTTP_ONLY : undefined;
  const jwt = jwtSupport(target);
  const principal = (render: (v: string) => Principal | Unsupported): SideTerm => ({
    side: 'principal',
    ...values,
    render,
  });
  const permission = (render: (v: string) => Permission | Unsupported): SideTerm => ({
    side: 'permission',
    ...values,
    render,
  });
  switch (c.key) {
    case 'source.ip':
      return principal((v) => ({ direct_remote_ip: cidrRange(v) }));
    case 'remote.ip':
      return principal((v) => ({ remote_ip: cidrRange(v) }));
    case 'source.namespace':
      return principal((v) => ({ authenticated: { principal_name: namespaceMatcher(v) } }));
    case 'source.principal':
      return principal((v) => ({ authenticated: { principal_name: principalMatcher(v) } }));
    case 'request.auth.principal':
      return principal((v) => jwt ?? requestPrincipal(v));
    case 'request.auth.audiences':
      return principal((v) => jwt ?? { metadata: claimMatcher(['aud'], v) });
    case 'request.auth.presenter':
      return principal((v) => jwt ?? { metadata: claimMatcher(['azp'], v) });
    case 'destination.ip':
      return permission((v) => ({ destination_ip: cidrRange(v) }));
    case 'destination.port':
      return permission((v) => ({ destination_port: Number(v) }));
    case 'connection.sni':
      return permission((v) =>
        target === 'grpc' ? NO_SNI : { requested_server_name: stringMatcher(v, { ignoreCase: true }) },
      );
  }
  const names = bracketNames(c.key);
  if (c.key.startsWith('request.headers'))
    return principal((v) => http ?? { header: headerMatcher((names[0] ?? '').toLowerCase(), v) });
  // request.auth.claims[...] (validation admits no other key).
  return principal((v) => jwt ?? { metadata: claimMatcher(names, v) });
}

/** Why JWT attributes cannot be evaluated on the target, or undefined when they can. */
function jwtSupport(target: AuthzTarget): Unsupported | undefined {
  if (target === 'envoy-tcp') return HTTP_ONLY;
  return target === 'grpc' ? NO_JWT : undefined;
}

function requestPrincipal(value: string): Principal {
  const [iss, sub] = requestPrincipalMatchers(value);
  return { and_ids: { ids: [{ metadata: iss }, { metadata: sub }] } };
}

function bracketNames(key: string): string[] {
  return [...key.matchAll(/\[([^[\]]+)\]/g)].map((m) => m[1] ?? '');
}
