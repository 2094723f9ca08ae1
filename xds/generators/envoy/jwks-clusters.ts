// The clusters Envoy fetches JWKS through, one per `jwksUri` host and port of the RequestAuthentications
// selecting the proxy's workload (xds/traffic/jwt-authn.ts names them `jwks|PORT||HOST`): the host by
// DNS (or its IP), and for https a TLS origination verified against the system CA bundle and the
// host's name — a JWKS decides which tokens are accepted, so it is never fetched unverified.
import { isIP } from 'node:net';
import type { Cluster } from '../../generated/envoy/config/cluster/v3/Cluster.js';
import type { UpstreamTlsContext } from '../../generated/envoy/extensions/transport_sockets/tls/v3/UpstreamTlsContext.js';
import type { GenerateContext } from '../generator.js';
import { toAny } from '../../proto/resource.js';
import { jwksEndpoints, type JwksEndpoint } from '../../traffic/jwt-authn.js';
import { CONNECT_TIMEOUT } from './clusters.js';
import { socketAddress, UPSTREAM_TLS_TYPE } from './filters.js';
import { envoyNode } from './view.js';

/** The CA bundle https JWKS servers are verified against (Debian, Ubuntu, Alpine; Envoy's images). */
export const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

function endpointsFor(ctx: GenerateContext): JwksEndpoint[] {
  const workload = { namespace: ctx.proxy.namespace, labels: envoyNode(ctx.proxy).labels };
  return jwksEndpoints(ctx.index.authorization.requestAuthenticationsFor(workload));
}

/** The JWKS cluster names of the proxy, for CDS wildcard subscriptions. */
export function jwksClusterNames(ctx: GenerateContext): string[] {
  return endpointsFor(ctx).map((e) => e.cluster);
}

/** The JWKS cluster `name`, when a RequestAuthentication of the proxy's workload fetches from it. */
export function jwksCluster(ctx: GenerateContext, name: string): Cluster | undefined {
  const endpoint = endpointsFor(ctx).find((e) => e.cluster === name);
  if (!endpoint) return undefined;
  const ip = isIP(endpoint.host) !== 0;
  return {
    name,
    type: ip ? 'STATIC' : 'LOGICAL_DNS',
    connect_timeout: CONNECT_TIMEOUT,
    ...(!ip && { dns_lookup_family: 'V4_ONLY' }),
    lb_policy: 'ROUND_ROBIN',
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: socketAddress(endpoint.host, endpoint.port) } }] }],
    },
    ...(endpoint.tls && {
      transport_socket: {
        name: 'envoy.transport_sockets.tls',
        typed_config: toAny(UPSTREAM_TLS_TYPE, jwksTlsContext(endpoint.host, ip)),
      },
    }),
  };
}

function jwksTlsContext(host: string, ip: boolean): UpstreamTlsContext {
  return {
    ...(!ip && { sni: host }),
    common_tls_context: {
      validation_context: {
        trusted_ca: { filename: SYSTEM_CA_BUNDLE },
        match_typed_subject_alt_names: [{ san_type: ip ? 'IP_ADDRESS' : 'DNS', matcher: { exact: host } }],
      },
    },
  };
}
