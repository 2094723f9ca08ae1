// gRFC A29 client security on proxyless gRPC clusters: with DestinationRule `tls.mode: ISTIO_MUTUAL`
// the cluster's UpstreamTlsContext names the bootstrap's `file_watcher` certificate provider (`default`,
// written by `portolan bootstrap --kind grpc --cert-dir`) for the client certificate and the roots, and
// matches the server's SPIFFE URI against the service's endpoints' identities. The client must use
// XdsChannelCredentials. SIMPLE and MUTUAL name files, which A29 cannot express: such a cluster is not
// served (calls fail) rather than served in plaintext.
import type { Cluster } from '../../generated/envoy/config/cluster/v3/Cluster.js';
import type { UpstreamTlsContext } from '../../generated/envoy/extensions/transport_sockets/tls/v3/UpstreamTlsContext.js';
import type { Service } from '../../../model/service.js';
import type { GenerateContext } from '../generator.js';
import { toAny } from '../../proto/resource.js';
import { clientTlsFor, serviceIdentities } from '../../traffic/client-tls.js';
import { DEFAULT_TRUST_DOMAIN, GRPC_CERT_PROVIDER } from '../../../mesh/workload-certs.js';
import { UPSTREAM_TLS_TYPE } from '../envoy/filters.js';

/** `cluster` secured as its DestinationRule asks; undefined when gRPC cannot honour the rule. */
export function withGrpcClientTls(
  ctx: GenerateContext,
  service: Service,
  port: number,
  cluster: Cluster,
  subset = '',
): Cluster | undefined {
  const tls = clientTlsFor(ctx, service, port, subset);
  if (!tls || tls.mode === 'DISABLE') return cluster;
  if (tls.mode !== 'ISTIO_MUTUAL') return undefined;
  const context = grpcUpstreamTlsContext(ctx, service, port);
  return {
    ...cluster,
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: toAny(UPSTREAM_TLS_TYPE, context),
    },
  };
}

export function grpcUpstreamTlsContext(
  ctx: GenerateContext,
  service: Service,
  port: number,
): UpstreamTlsContext {
  const trustDomain = ctx.trustDomain ?? DEFAULT_TRUST_DOMAIN;
  const ids = serviceIdentities(ctx.catalog, service, port, trustDomain);
  // grpc-js compares `exact` matchers as DNS names only; an anchored regex matches a URI exactly.
  const san =
    ids.length > 0
      ? { safe_regex: { regex: `^(${ids.map(escapeRegex).join('|')})$` } }
      : { prefix: `spiffe://${trustDomain}/` };
  return {
    common_tls_context: {
      tls_certificate_provider_instance: { instance_name: GRPC_CERT_PROVIDER },
      validation_context: {
        ca_certificate_provider_instance: { instance_name: GRPC_CERT_PROVIDER },
        match_subject_alt_names: [san],
      },
    },
  };
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
