// Where a workload's certificate files are, and how Envoy and gRPC are told: one place for the names
// `portolan cert` writes, `portolan bootstrap` references and the generators put in TLS contexts.
//
// Envoy reads the files through file-based SDS (`path_config_source`): two small SDS files in the
// certificate directory hold the `default` (workload certificate) and `ROOTCA` (trust bundle)
// secrets — Istio's secret names — whose certificate files are re-read when `portolan cert` renames
// new ones into the directory. Inline file names in a TLS context would be read once, at load.
// gRPC reads them through the `file_watcher` certificate provider (gRFC A29) named `default`.
import { join } from 'node:path';

/** The SPIFFE trust domain when the server was given none (`--trust-domain`'s default). */
export const DEFAULT_TRUST_DOMAIN = 'cluster.local';

/** Node metadata: the absolute directory `portolan cert --out` writes (`portolan bootstrap --cert-dir`). */
export const CERT_DIR_META = 'PORTOLAN_CERT_DIR';
export const DEFAULT_CERT_DIR = '/etc/portolan/certs';

export const CERT_CHAIN_FILE = 'cert-chain.pem';
export const KEY_FILE = 'key.pem';
export const ROOT_CERT_FILE = 'root-cert.pem';
export const SDS_CERT_FILE = 'sds-default.yaml';
export const SDS_ROOT_FILE = 'sds-rootca.yaml';

/** Istio's SDS secret names: the workload certificate and the root bundle. */
export const CERT_SECRET = 'default';
export const ROOT_SECRET = 'ROOTCA';

/**
 * Node metadata: the bootstrap cluster of an SDS server (`portolan agent`'s Unix socket) that TLS
 * contexts fetch `default` and `ROOTCA` from, instead of the SDS files in the certificate directory.
 */
export const SDS_CLUSTER_META = 'PORTOLAN_SDS_CLUSTER';
/** The SDS cluster `portolan agent`'s Envoy bootstrap defines (Istio's name for it). */
export const AGENT_SDS_CLUSTER = 'sds-grpc';

/** Where an Envoy's TLS contexts get their secrets: SDS files in certDir, or an SDS cluster when set. */
export interface SecretSource {
  readonly certDir: string;
  /** '' for the files. */
  readonly sdsCluster: string;
}

/** The bootstrap's certificate-provider instance for gRPC (A29 `file_watcher`). */
export const GRPC_CERT_PROVIDER = 'default';

const SECRET_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';

/** The contents of the two SDS files (DiscoveryResponse JSON, which Envoy also reads as YAML). */
export function sdsFiles(certDir: string): Record<string, object> {
  const response = (secret: object): object => ({ resources: [{ '@type': SECRET_TYPE, ...secret }] });
  return {
    [SDS_CERT_FILE]: response({
      name: CERT_SECRET,
      tls_certificate: {
        certificate_chain: { filename: join(certDir, CERT_CHAIN_FILE) },
        private_key: { filename: join(certDir, KEY_FILE) },
        watched_directory: { path: certDir },
      },
    }),
    [SDS_ROOT_FILE]: response({
      name: ROOT_SECRET,
      validation_context: {
        trusted_ca: { filename: join(certDir, ROOT_CERT_FILE) },
        watched_directory: { path: certDir },
      },
    }),
  };
}

/** The `file_watcher` provider config for a gRPC bootstrap's `certificate_providers`. */
export function grpcCertificateProviders(certDir: string): Record<string, object> {
  return {
    [GRPC_CERT_PROVIDER]: {
      plugin_name: 'file_watcher',
      config: {
        certificate_file: join(certDir, CERT_CHAIN_FILE),
        private_key_file: join(certDir, KEY_FILE),
        ca_certificate_file: join(certDir, ROOT_CERT_FILE),
        refresh_interval: '60s',
      },
    },
  };
}
