// Client TLS on Envoy's outbound clusters, from the DestinationRule's `tls` (xds/traffic/client-tls.ts):
// ISTIO_MUTUAL presents the workload certificate (SDS secret `default`) and accepts a server from our
// roots (`ROOTCA`) whose SPIFFE URI is one of the service's endpoints' identities (any identity of the
// trust domain when none is known); SIMPLE and MUTUAL use the DR's own files (caCertificates,
// clientCertificate, privateKey), `sni` and `subjectAltNames`; DISABLE, or no rule, is plaintext.
import type { Cluster } from '../../generated/envoy/config/cluster/v3/Cluster.js';
import type { SubjectAltNameMatcher } from '../../generated/envoy/extensions/transport_sockets/tls/v3/SubjectAltNameMatcher.js';
import type { UpstreamTlsContext } from '../../generated/envoy/extensions/transport_sockets/tls/v3/UpstreamTlsContext.js';
import type { ClientTLSSettings } from '../../../mesh/types.js';
import type { Service } from '../../../model/service.js';
import type { GenerateContext } from '../generator.js';
import { toAny } from '../../proto/resource.js';
import { clientTlsFor, serviceIdentities } from '../../traffic/client-tls.js';
import { DEFAULT_CERT_DIR, DEFAULT_TRUST_DOMAIN } from '../../../mesh/workload-certs.js';
import { UPSTREAM_TLS_TYPE } from './filters.js';
import { workloadTlsContext } from './inbound-tls.js';

/** `cluster` with the transport socket its DestinationRule asks for (unchanged when plaintext). */
export function withUpstreamTls(
  ctx: GenerateContext,
  service: Service,
  port: number,
  cluster: Cluster,
  subset = '',
): Cluster {
  const context = upstreamTlsContext(ctx, service, port, clientTlsFor(ctx, service, port, subset));
  if (!context) return cluster;
  return {
    ...cluster,
    transport_socket: {
      name: 'envoy.transport_sockets.tls',
      typed_config: toAny(UPSTREAM_TLS_TYPE, context),
    },
  };
}

export function upstreamTlsContext(
  ctx: GenerateContext,
  service: Service,
  port: number,
  tls: ClientTLSSettings | undefined,
): UpstreamTlsContext | undefined {
  if (!tls || tls.mode === 'DISABLE') return undefined;
  const sni = tls.sni ? { sni: tls.sni } : {};
  if (tls.mode === 'ISTIO_MUTUAL') {
    const trustDomain = ctx.trustDomain ?? DEFAULT_TRUST_DOMAIN;
    const ids = serviceIdentities(ctx.catalog, service, port, trustDomain);
    const sans: SubjectAltNameMatcher[] =
      ids.length > 0
        ? ids.map((id) => ({ san_type: 'URI', matcher: { exact: id } }))
        : [{ san_type: 'URI', matcher: { prefix: `spiffe://${trustDomain}/` } }];
    const secrets = ctx.proxy.envoy ?? { certDir: DEFAULT_CERT_DIR, sdsCluster: '' };
    return { common_tls_context: workloadTlsContext(secrets, trustDomain, [], sans), ...sni };
  }
  const sans: SubjectAltNameMatcher[] = (tls.subjectAltNames ?? []).map((s) => ({
    san_type: s.startsWith('spiffe://') ? 'URI' : 'DNS',
    matcher: { exact: s },
  }));
  const verify = !tls.insecureSkipVerify && tls.caCertificates;
  return {
    common_tls_context: {
      ...(tls.mode === 'MUTUAL' &&
        tls.clientCertificate &&
        tls.privateKey && {
          tls_certificates: [
            {
              certificate_chain: { filename: tls.clientCertificate },
              private_key: { filename: tls.privateKey },
            },
          ],
        }),
      ...(verify && {
        validation_context: {
          trusted_ca: { filename: tls.caCertificates },
          ...(sans.length > 0 && { match_typed_subject_alt_names: sans }),
        },
      }),
    },
    sni: tls.sni ?? service.hostname,
  };
}
