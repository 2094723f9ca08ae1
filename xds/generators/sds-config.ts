// How an Envoy TLS context names the workload's secrets: file-based SDS reading the SDS files
// `portolan cert` writes into the certificate directory (mesh/workload-certs.ts has the layout), or,
// for a node that names an SDS cluster (`portolan agent`'s bootstrap), SDS over gRPC from that cluster.
import { join } from 'node:path';
import type { SdsSecretConfig } from '../generated/envoy/extensions/transport_sockets/tls/v3/SdsSecretConfig.js';
import {
  CERT_SECRET,
  ROOT_SECRET,
  SDS_CERT_FILE,
  SDS_ROOT_FILE,
  type SecretSource,
} from '../../mesh/workload-certs.js';

/** An SdsSecretConfig for secret `name` from `source` (proto3 JSON). */
export function sdsSecretConfig(
  source: SecretSource,
  name: typeof CERT_SECRET | typeof ROOT_SECRET,
): SdsSecretConfig {
  const { certDir, sdsCluster } = source;
  if (sdsCluster)
    return {
      name,
      sds_config: {
        api_config_source: {
          api_type: 'GRPC',
          transport_api_version: 'V3',
          grpc_services: [{ envoy_grpc: { cluster_name: sdsCluster } }],
          set_node_on_first_message_only: true,
        },
        // Istio's choice: a listener waits for its secrets rather than starting without them.
        initial_fetch_timeout: { seconds: 0 },
        resource_api_version: 'V3',
      },
    };
  return {
    name,
    sds_config: {
      path_config_source: {
        path: join(certDir, name === CERT_SECRET ? SDS_CERT_FILE : SDS_ROOT_FILE),
        watched_directory: { path: certDir },
      },
      resource_api_version: 'V3',
    },
  };
}
