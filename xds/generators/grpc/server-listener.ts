// gRFC A36 xDS server listeners for proxyless gRPC servers: an XdsServer bound to IP:PORT asks for
// `grpc/server?xds.resource.listening_address=IP:PORT` (the bootstrap's template, written by
// `portolan bootstrap --kind grpc`). The listener accepts every RPC (one inline route with a
// non-forwarding action) and, when the workload's PeerAuthentication is STRICT for the port, carries
// a DownstreamTlsContext requiring a client certificate, with the bootstrap's `file_watcher`
// certificate provider (gRFC A29) for its own certificate and the roots. A gRPC server cannot tell
// TLS from plaintext on one port (no tls_inspector), so PERMISSIVE is served as plaintext there.
// The AuthorizationPolicies selecting the server (its NAMESPACE and LABELS) become RBAC HTTP filters
// before the router (gRFC A41), never marked optional: a server whose gRPC has no RBAC filter
// (@grpc/grpc-js-xds without GRPC_XDS_EXPERIMENTAL_RBAC=true) rejects the listener and serves
// nothing rather than serving unprotected. What gRPC cannot evaluate is handled in
// xds/traffic/authz-rbac.ts (a DENY it cannot render denies every call on the port).
import { isIP } from 'node:net';
import type { DownstreamTlsContext } from '../../generated/envoy/extensions/transport_sockets/tls/v3/DownstreamTlsContext.js';
import type { Listener } from '../../generated/envoy/config/listener/v3/Listener.js';
import type { HttpConnectionManager } from '../../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import type { GenerateContext } from '../generator.js';
import type { Proxy } from '../../proxy/proxy.js';
import { encodeResource, toAny, type EncodedResource } from '../../proto/resource.js';
import { mtlsModeFor } from '../../traffic/peer-authentication.js';
import { LISTENER } from '../../proto/type-urls.js';
import { GRPC_CERT_PROVIDER } from '../../../mesh/workload-certs.js';
import { DOWNSTREAM_TLS_TYPE, HCM_TYPE, ROUTER_TYPE } from '../envoy/filters.js';
import { rbacHttpFilters } from '../envoy/authz-filters.js';
import { portAuthz } from '../../traffic/authz-rbac.js';

export const GRPC_SERVER_LISTENER_TEMPLATE = 'grpc/server?xds.resource.listening_address=%s';
const PREFIX = GRPC_SERVER_LISTENER_TEMPLATE.replace('%s', '');

export function isGrpcServerListenerName(name: string): boolean {
  return name.startsWith(PREFIX);
}

export function grpcServerListener(ctx: GenerateContext, name: string): EncodedResource | undefined {
  const address = parseListeningAddress(name.slice(PREFIX.length));
  if (!address) return undefined;
  const workload = { namespace: ctx.proxy.namespace, labels: grpcLabels(ctx.proxy) };
  const mode = mtlsModeFor(ctx.config, workload, address.port);
  const authz = portAuthz(ctx.index.authorization.policiesFor(workload), 'grpc');
  const hcm: HttpConnectionManager = {
    stat_prefix: `inbound_${address.port}`,
    route_config: {
      name: `inbound|${address.port}`,
      virtual_hosts: [
        { name: 'inbound', domains: ['*'], routes: [{ match: { prefix: '/' }, non_forwarding_action: {} }] },
      ],
    },
    http_filters: [
      ...rbacHttpFilters(authz),
      { name: 'envoy.filters.http.router', typed_config: toAny(ROUTER_TYPE, {}) },
    ],
  };
  const listener: Listener = {
    name,
    address: { socket_address: { address: address.host, port_value: address.port } },
    filter_chains: [
      {
        name: `inbound|${address.port}`,
        filters: [
          { name: 'envoy.filters.network.http_connection_manager', typed_config: toAny(HCM_TYPE, hcm) },
        ],
        ...(mode === 'STRICT' && {
          transport_socket: {
            name: 'envoy.transport_sockets.tls',
            typed_config: toAny(DOWNSTREAM_TLS_TYPE, grpcDownstreamTlsContext()),
          },
        }),
      },
    ],
  };
  return encodeResource(LISTENER, name, listener);
}

/** mTLS with the bootstrap's provider: our certificate, and a client certificate from our roots. */
export function grpcDownstreamTlsContext(): DownstreamTlsContext {
  return {
    require_client_certificate: { value: true },
    common_tls_context: {
      tls_certificate_provider_instance: { instance_name: GRPC_CERT_PROVIDER },
      validation_context: { ca_certificate_provider_instance: { instance_name: GRPC_CERT_PROVIDER } },
    },
  };
}

/** `IP:PORT` or `[IPv6]:PORT`, as XdsServer formats its bound address (percent-encoded by grpc-js). */
function parseListeningAddress(encoded: string): { host: string; port: number } | undefined {
  let text: string;
  try {
    text = decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(text);
  const host = m?.[1];
  const port = Number(m?.[2]);
  if (!host || isIP(host) === 0 || !(port >= 1 && port <= 65535)) return undefined;
  return { host, port };
}

/** The server's labels (LABELS metadata), for PeerAuthentication selectors. */
export function grpcLabels(proxy: Proxy): Record<string, string> {
  const raw = proxy.metadata.LABELS;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return {};
  return Object.fromEntries(
    Object.entries(raw).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
}
