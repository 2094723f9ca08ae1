// `portolan bootstrap --kind grpc`: the bootstrap file a proxyless gRPC client reads
// (GRPC_XDS_BOOTSTRAP) — the xDS server, the node, and with --cert-dir the `file_watcher` certificate
// provider (gRFC A29) that the clusters' and server listeners' TLS contexts name.
import { join } from 'node:path';
import {
  CERT_CHAIN_FILE,
  grpcCertificateProviders,
  KEY_FILE,
  ROOT_CERT_FILE,
} from '../mesh/workload-certs.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../xds/generators/grpc/server-listener.js';
import type { BootstrapOptions } from './bootstrap.js';

export function buildGrpcBootstrap(o: BootstrapOptions): Record<string, unknown> {
  const host = o.xdsAddr.host.includes(':') ? `[${o.xdsAddr.host}]` : o.xdsAddr.host;
  const certDir = o.certDir;
  return {
    xds_servers: [
      {
        server_uri: `${host}:${o.xdsAddr.port}`,
        // `tls` is read by gRPC C-core, Java and Go; @grpc/grpc-js-xds 1.14 knows only `insecure`
        // and `google_default` here, and refuses a bootstrap without one of them.
        channel_creds:
          o.xdsTls && certDir
            ? [
                {
                  type: 'tls',
                  config: {
                    ca_certificate_file: join(certDir, ROOT_CERT_FILE),
                    certificate_file: join(certDir, CERT_CHAIN_FILE),
                    private_key_file: join(certDir, KEY_FILE),
                  },
                },
              ]
            : [{ type: 'insecure' }],
        server_features: ['xds_v3'],
      },
    ],
    node: {
      id: o.nodeId,
      cluster: o.cluster,
      metadata: { NAMESPACE: o.namespace, ...o.metadata },
      // grpc-js-xds refuses a node without `locality`.
      locality: o.locality
        ? { region: o.locality.region, zone: o.locality.zone, sub_zone: o.locality.subzone }
        : {},
    },
    ...(certDir && { certificate_providers: grpcCertificateProviders(certDir) }),
    // For XdsServer (gRFC A36): the listener it asks for when bound to IP:PORT.
    server_listener_resource_name_template: GRPC_SERVER_LISTENER_TEMPLATE,
  };
}
