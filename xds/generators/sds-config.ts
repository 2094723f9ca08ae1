// How an Envoy TLS context names the workload's secrets: file-based SDS reading the SDS files
// `portolan cert` writes into the certificate directory (mesh/workload-certs.ts has the layout).
import { join } from 'node:path';
import type { SdsSecretConfig } from '../generated/envoy/extensions/transport_sockets/tls/v3/SdsSecretConfig.js';
import { CERT_SECRET, ROOT_SECRET, SDS_CERT_FILE, SDS_ROOT_FILE } from '../../mesh/workload-certs.js';

/** An SdsSecretConfig reading secret `name` from its SDS file in `certDir` (proto3 JSON). */
export function sdsSecretConfig(
  certDir: string,
  name: typeof CERT_SECRET | typeof ROOT_SECRET,
): SdsSecretConfig {
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
