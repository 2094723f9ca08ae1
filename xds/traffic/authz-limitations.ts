// What of the AuthorizationPolicies and RequestAuthentications a kind of client cannot evaluate, for
// /debug/configz beside the traffic limitations, mirroring xds/traffic/authz-rbac.ts: HTTP attributes
// on Envoy's TCP ports (an ALLOW rule never matches, a DENY or AUDIT rule matches without them), and
// on proxyless gRPC servers JWT attributes and the SNI (an ALLOW rule never matches, a DENY makes the
// port deny every call), AUDIT (no shadow rules) and RequestAuthentication (no JWT filter).
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type { AuthorizationAction } from '../../mesh/security-types.js';
import { resourceKey } from '../../mesh/types.js';
import type { ClientKind, TrafficLimitation } from './cluster-limitations.js';

/** How an attribute fares: on Envoy TCP chains (HTTP-only) and on gRPC servers (not evaluable). */
interface Support {
  readonly httpOnly: boolean;
  readonly grpc?: string;
}

const JWT: Support = { httpOnly: true, grpc: 'gRPC servers have no JWT authentication' };
const HTTP: Support = { httpOnly: true };
const SNI: Support = { httpOnly: false, grpc: 'gRPC servers do not see the SNI (gRFC A41)' };

function conditionSupport(key: string): Support | undefined {
  if (key.startsWith('request.auth.')) return JWT;
  if (key.startsWith('request.headers')) return HTTP;
  return key === 'connection.sni' ? SNI : undefined;
}

export function authzLimitations(config: MeshConfig): TrafficLimitation[] {
  const out: TrafficLimitation[] = [];
  for (const policy of config.authorizationPolicies) {
    const resource = resourceKey(policy);
    const action = policy.spec.action ?? 'ALLOW';
    const add = (field: string, clients: ClientKind[], reason: string): void => {
      out.push({ resource, field, clients, reason });
    };
    if (action === 'AUDIT')
      add('spec.action', ['grpc'], 'gRPC servers evaluate no shadow rules: AUDIT is not rendered for them');
    const report = (field: string, what: string, support: Support): void => {
      if (support.httpOnly) add(field, ['envoy'], `${what}: ${httpOnlyEffect(action)}`);
      if (support.grpc && action !== 'AUDIT')
        add(field, ['grpc'], `${what}: ${support.grpc}; ${grpcEffect(action)}`);
    };
    policy.spec.rules?.forEach((rule, i) => {
      rule.from?.forEach(({ source }, j) => {
        for (const key of ['requestPrincipals', 'notRequestPrincipals'] as const)
          if (source[key]) report(`spec.rules[${i}].from[${j}].source.${key}`, key, JWT);
      });
      rule.to?.forEach(({ operation }, j) => {
        for (const key of ['hosts', 'notHosts', 'methods', 'notMethods', 'paths', 'notPaths'] as const)
          if (operation[key]) report(`spec.rules[${i}].to[${j}].operation.${key}`, key, HTTP);
      });
      rule.when?.forEach((condition, j) => {
        const support = conditionSupport(condition.key);
        if (support) report(`spec.rules[${i}].when[${j}]`, condition.key, support);
      });
    });
  }
  for (const ra of config.requestAuthentications)
    out.push({
      resource: resourceKey(ra),
      field: 'spec.jwtRules',
      clients: ['grpc'],
      reason:
        'proxyless gRPC has no JWT filter: not rendered for gRPC servers (their calls carry no request principal)',
    });
  return out;
}

function httpOnlyEffect(action: AuthorizationAction): string {
  return action === 'ALLOW'
    ? 'HTTP-only: on a TCP port (network RBAC) this ALLOW rule never matches'
    : 'HTTP-only: on a TCP port (network RBAC) the rule applies without it, so it matches more';
}

function grpcEffect(action: AuthorizationAction): string {
  return action === 'ALLOW'
    ? 'this ALLOW rule never matches there'
    : "this DENY cannot be rendered: the server's port denies every call (fail closed)";
}
