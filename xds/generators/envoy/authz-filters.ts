// The filters that enforce AuthorizationPolicy and RequestAuthentication on a workload's inbound
// chains (sidecars and gateways): in an HTTP connection manager, jwt_authn then the RBAC HTTP filters
// (audit as shadow rules, deny, allow) before the router; on a TCP chain, the RBAC network filters
// before tcp_proxy. What they contain is decided in xds/traffic/authz-rbac.ts and jwt-authn.ts; the
// gRPC server listener uses the same HTTP filters (xds/generators/grpc/server-listener.ts).
import type { Filter } from '../../generated/envoy/config/listener/v3/Filter.js';
import type { HttpFilter } from '../../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpFilter.js';
import type { RBAC as HttpRbac } from '../../generated/envoy/extensions/filters/http/rbac/v3/RBAC.js';
import type { RBAC as NetworkRbac } from '../../generated/envoy/extensions/filters/network/rbac/v3/RBAC.js';
import type { WorkloadRef } from '../../../mesh/authorization-index.js';
import type { MeshIndex } from '../../../mesh/mesh-index.js';
import { toAny } from '../../proto/resource.js';
import { JWT_FILTER_NAME } from '../../traffic/authz-matchers.js';
import { isEmptyAuthz, portAuthz, type PortAuthz } from '../../traffic/authz-rbac.js';
import { JWT_AUTHN_TYPE, jwtAuthentication } from '../../traffic/jwt-authn.js';

export const RBAC_HTTP_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC';
export const RBAC_NETWORK_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC';

/** Filter names: unique within a chain (gRPC refuses duplicates), one per action. */
export const AUTHZ_FILTER_NAMES = {
  audit: 'portolan.authz.audit',
  deny: 'portolan.authz.deny',
  allow: 'portolan.authz.allow',
} as const;

/** Stat prefix of AUDIT's shadow rules: `http.<hcm prefix>.rbac.portolan_audit_shadow_denied` counts audited requests. */
const AUDIT_STAT_PREFIX = 'portolan_audit_';

/** What a workload's inbound chains put before their terminal filter. */
export interface InboundAuthz {
  /** jwt_authn and the RBAC HTTP filters, for an HTTP connection manager (before the router). */
  httpFilters(): HttpFilter[];
  /** The RBAC network filters, for a TCP chain (before tcp_proxy). */
  networkFilters(): Filter[];
}

/** No policy applies: nothing is added. */
export const NO_AUTHZ: InboundAuthz = { httpFilters: () => [], networkFilters: () => [] };

/** The filters for `workload` (its namespace and labels), from the policies the index selects. */
export function inboundAuthz(index: MeshIndex, workload: WorkloadRef): InboundAuthz {
  const policies = index.authorization.policiesFor(workload);
  const requestAuthentications = index.authorization.requestAuthenticationsFor(workload);
  if (policies.length === 0 && requestAuthentications.length === 0) return NO_AUTHZ;
  const http = portAuthz(policies, 'envoy-http');
  const tcp = portAuthz(policies, 'envoy-tcp');
  const jwt = jwtAuthentication(requestAuthentications);
  return {
    httpFilters: () => [
      ...(jwt ? [{ name: JWT_FILTER_NAME, typed_config: toAny(JWT_AUTHN_TYPE, jwt) }] : []),
      ...rbacHttpFilters(http),
    ],
    networkFilters: () => rbacNetworkFilters(tcp),
  };
}

/** The RBAC HTTP filters of `authz`, in order; none when nothing applies. */
export function rbacHttpFilters(authz: PortAuthz): HttpFilter[] {
  if (isEmptyAuthz(authz)) return [];
  const filter = (name: string, config: HttpRbac): HttpFilter => ({
    name,
    typed_config: toAny(RBAC_HTTP_TYPE, config),
  });
  return [
    ...(authz.audit
      ? [
          filter(AUTHZ_FILTER_NAMES.audit, {
            shadow_rules: authz.audit,
            shadow_rules_stat_prefix: AUDIT_STAT_PREFIX,
          }),
        ]
      : []),
    ...(authz.deny ? [filter(AUTHZ_FILTER_NAMES.deny, { rules: authz.deny })] : []),
    ...(authz.allow ? [filter(AUTHZ_FILTER_NAMES.allow, { rules: authz.allow })] : []),
  ];
}

/** The RBAC network filters of `authz` (Istio's `tcp.` stat prefix), in order. */
function rbacNetworkFilters(authz: PortAuthz): Filter[] {
  const filter = (name: string, config: Omit<NetworkRbac, 'stat_prefix'>): Filter => ({
    name,
    typed_config: toAny(RBAC_NETWORK_TYPE, { stat_prefix: 'tcp.', ...config }),
  });
  return [
    ...(authz.audit
      ? [
          filter(AUTHZ_FILTER_NAMES.audit, {
            shadow_rules: authz.audit,
            shadow_rules_stat_prefix: AUDIT_STAT_PREFIX,
          }),
        ]
      : []),
    ...(authz.deny ? [filter(AUTHZ_FILTER_NAMES.deny, { rules: authz.deny })] : []),
    ...(authz.allow ? [filter(AUTHZ_FILTER_NAMES.allow, { rules: authz.allow })] : []),
  ];
}
