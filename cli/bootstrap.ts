// `portolan bootstrap`: an Envoy v3 bootstrap for one node — identity and Portolan metadata, the
// admin address, ADS for LDS and CDS over the static `xds_cluster` (HTTP/2; plaintext, or TLS with
// cert/key/CA files), stats and an overload limit on downstream connections. The result is checked
// with the same (validate.rules) validator as every pushed resource before it is printed.
// `portolan agent --print-bootstrap envoy` uses the same builder with the agent's Unix sockets: ADS
// over `xdsPipe` (plaintext: the agent holds the TLS) and SDS from `sdsPipe` as cluster `sds-grpc`.
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { META, parseEnvoyNode } from '../xds/proxy/envoy-node.js';
import { NodeError } from '../xds/proxy/node-error.js';
import { fromProtoJson } from '../xds/validate/proto-json.js';
import { validateObject } from '../xds/validate/pgv-validator.js';
import { controlPlaneIdentity, IdentityError, validateTrustDomain } from '../ca/identity.js';
import {
  AGENT_SDS_CLUSTER,
  CERT_SECRET,
  DEFAULT_TRUST_DOMAIN,
  ROOT_SECRET,
  SDS_CLUSTER_META,
} from '../mesh/workload-certs.js';
import { sdsSecretConfig } from '../xds/generators/sds-config.js';
import { buildGrpcBootstrap } from './grpc-bootstrap.js';
import { OptionError, parseAddress, parsePositiveInt, type HostAndPort } from '../adapters/option-values.js';

export interface BootstrapOptions {
  readonly nodeId: string;
  readonly cluster: string;
  readonly namespace: string;
  readonly xdsAddr: HostAndPort;
  readonly adminAddr: HostAndPort;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly tls?: { readonly cert: string; readonly key: string; readonly ca: string };
  /** `portolan cert --out`, absolute: workload mTLS, and with `xdsTls` the xDS connection too. */
  readonly certDir?: string;
  readonly xdsTls?: boolean;
  readonly kind: 'envoy' | 'grpc';
  readonly maxConnections: number;
  readonly locality?: { readonly region: string; readonly zone: string; readonly subzone: string };
  /** The mesh's trust domain: with `xdsTls`, the xDS server must carry the control plane's identity in it. */
  readonly trustDomain?: string;
  /** ADS over this Unix socket instead of `xdsAddr` (the agent's `--xds-socket`). */
  readonly xdsPipe?: string;
  /** An SDS server on this Unix socket, as cluster `sds-grpc` (the agent's `--sds-socket`). */
  readonly sdsPipe?: string;
}

const HTTP_OPTIONS = 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions';
const UPSTREAM_TLS = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext';
const DOWNSTREAM_CONNECTIONS =
  'type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig';
const ADS = { ads: {}, resource_api_version: 'V3' };

/** One static HTTP/2 cluster to a gRPC server at a socket address or a Unix socket (`pipe`). */
function grpcCluster(
  name: string,
  address: { host: string; port: number } | { pipe: string },
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const pipe = 'pipe' in address;
  return {
    name,
    type: pipe || isIP(address.host) ? 'STATIC' : 'STRICT_DNS',
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: [
            {
              endpoint: {
                address: pipe
                  ? { pipe: { path: address.pipe } }
                  : { socket_address: { address: address.host, port_value: address.port } },
              },
            },
          ],
        },
      ],
    },
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': HTTP_OPTIONS,
        // ADS is one long-lived stream: keep it alive through idle NATs and firewalls.
        explicit_http_config: {
          http2_protocol_options: pipe ? {} : { connection_keepalive: { interval: '30s', timeout: '5s' } },
        },
      },
    },
    ...extra,
  };
}

/** The bootstrap in proto3 JSON (snake_case), as Envoy reads it with `-c`. */
export function buildBootstrap(o: BootstrapOptions): Record<string, unknown> {
  const xdsHost = o.xdsAddr.host;
  const fileSecrets = { certDir: o.certDir ?? '', sdsCluster: '' };
  // Only the control plane's certificate carries this SAN (the CA refuses it to workloads).
  const controlPlane = controlPlaneIdentity(o.trustDomain ?? DEFAULT_TRUST_DOMAIN);
  return {
    node: {
      id: o.nodeId,
      cluster: o.cluster,
      metadata: {
        NAMESPACE: o.namespace,
        ...o.metadata,
        ...(o.sdsPipe && { [SDS_CLUSTER_META]: AGENT_SDS_CLUSTER }),
      },
      ...(o.locality && {
        locality: { region: o.locality.region, zone: o.locality.zone, sub_zone: o.locality.subzone },
      }),
    },
    admin: { address: { socket_address: { address: o.adminAddr.host, port_value: o.adminAddr.port } } },
    dynamic_resources: {
      ads_config: {
        api_type: 'GRPC',
        transport_api_version: 'V3',
        grpc_services: [{ envoy_grpc: { cluster_name: 'xds_cluster' } }],
        set_node_on_first_message_only: true,
      },
      lds_config: ADS,
      cds_config: ADS,
    },
    static_resources: {
      clusters: [
        grpcCluster(
          'xds_cluster',
          o.xdsPipe ? { pipe: o.xdsPipe } : { host: xdsHost, port: o.xdsAddr.port },
          {
            ...(!o.xdsPipe &&
              (o.tls || (o.xdsTls && o.certDir)) && {
                transport_socket: {
                  name: 'envoy.transport_sockets.tls',
                  typed_config: {
                    '@type': UPSTREAM_TLS,
                    sni: isIP(xdsHost) ? undefined : xdsHost,
                    common_tls_context: o.tls
                      ? {
                          tls_certificates: [
                            {
                              certificate_chain: { filename: o.tls.cert },
                              private_key: { filename: o.tls.key },
                            },
                          ],
                          validation_context: { trusted_ca: { filename: o.tls.ca } },
                        }
                      : {
                          // File-based SDS: renewed certificates are picked up without a restart.
                          tls_certificate_sds_secret_configs: [sdsSecretConfig(fileSecrets, CERT_SECRET)],
                          combined_validation_context: {
                            default_validation_context: {
                              match_typed_subject_alt_names: [
                                { san_type: 'URI', matcher: { exact: controlPlane } },
                              ],
                            },
                            validation_context_sds_secret_config: sdsSecretConfig(fileSecrets, ROOT_SECRET),
                          },
                        },
                  },
                },
              }),
          },
        ),
        ...(o.sdsPipe ? [grpcCluster(AGENT_SDS_CLUSTER, { pipe: o.sdsPipe })] : []),
      ],
    },
    stats_config: { use_all_default_tags: true },
    overload_manager: {
      refresh_interval: '0.25s',
      resource_monitors: [
        {
          name: 'envoy.resource_monitors.global_downstream_max_connections',
          typed_config: {
            '@type': DOWNSTREAM_CONNECTIONS,
            max_active_downstream_connections: o.maxConnections,
          },
        },
      ],
    },
  };
}

/** Violations of Envoy's rules in a bootstrap (empty when valid). */
export function validateBootstrap(bootstrap: Record<string, unknown>): string[] {
  const object = fromProtoJson('envoy.config.bootstrap.v3.Bootstrap', dropUndefined(bootstrap));
  return validateObject('envoy.config.bootstrap.v3.Bootstrap', object).map((v) => `${v.path}: ${v.message}`);
}

interface RawBootstrapOptions {
  nodeId?: string;
  cluster?: string;
  namespace: string;
  xdsAddr: string;
  adminAddr: string;
  format: string;
  outbound?: string;
  outboundPolicy?: string;
  upstream: string[];
  appPort: string[];
  httpProxyPort?: string;
  interceptionMode?: string;
  label: string[];
  instanceIps?: string;
  serviceAccount?: string;
  locality?: string;
  xdsCert?: string;
  xdsKey?: string;
  xdsCa?: string;
  certDir?: string;
  xdsTls?: boolean;
  kind: string;
  maxConnections: string;
  trustDomain?: string;
}

export function compileBootstrapOptions(raw: RawBootstrapOptions): BootstrapOptions {
  if (!raw.nodeId) throw new OptionError('--node-id is required');
  const metadata: Record<string, unknown> = {};
  if (raw.outbound) metadata[META.outbound] = raw.outbound;
  if (raw.outboundPolicy) metadata[META.outboundPolicy] = raw.outboundPolicy;
  if (raw.upstream.length > 0) metadata[META.upstreams] = raw.upstream.join(',');
  if (raw.appPort.length > 0) metadata[META.appPorts] = raw.appPort.join(',');
  if (raw.httpProxyPort) metadata[META.httpProxyPort] = raw.httpProxyPort;
  if (raw.interceptionMode) metadata.INTERCEPTION_MODE = raw.interceptionMode;
  if (raw.instanceIps) metadata.INSTANCE_IPS = raw.instanceIps;
  if (raw.serviceAccount) metadata.SERVICE_ACCOUNT = raw.serviceAccount;
  const certDir = raw.certDir === undefined ? undefined : resolve(raw.certDir);
  if (certDir) metadata[META.certDir] = certDir;
  if (raw.label.length > 0) {
    const labels: Record<string, string> = {};
    for (const l of raw.label) {
      const eq = l.indexOf('=');
      if (eq <= 0) throw new OptionError(`--label: "${l}" is not KEY=VALUE`);
      labels[l.slice(0, eq)] = l.slice(eq + 1);
    }
    metadata.LABELS = labels;
  }
  const idParts = raw.nodeId.split('~');
  try {
    // The same parser the server applies: a bootstrap it would refuse is never printed.
    parseEnvoyNode(idParts.length === 4 ? idParts[0] : undefined, metadata);
  } catch (err) {
    if (err instanceof NodeError) throw new OptionError(err.message);
    throw err;
  }
  const tlsFiles = [raw.xdsCert, raw.xdsKey, raw.xdsCa].filter((f) => f !== undefined);
  if (tlsFiles.length !== 0 && tlsFiles.length !== 3)
    throw new OptionError('--xds-cert, --xds-key and --xds-ca go together');
  if (raw.xdsTls && !certDir)
    throw new OptionError('--xds-tls uses the files in --cert-dir: give --cert-dir');
  if (raw.xdsTls && tlsFiles.length > 0)
    throw new OptionError('--xds-tls and --xds-cert/--xds-key/--xds-ca are alternatives');
  if (raw.kind !== 'envoy' && raw.kind !== 'grpc') throw new OptionError('--kind must be envoy or grpc');
  if (raw.format !== 'json' && raw.format !== 'yaml') throw new OptionError('--format must be json or yaml');
  const [region = '', zone = '', subzone = ''] = (raw.locality ?? '').split('/');
  return {
    nodeId: raw.nodeId,
    cluster: raw.cluster ?? (idParts.length === 4 ? (idParts[2] ?? raw.nodeId) : raw.nodeId),
    namespace: raw.namespace,
    xdsAddr: parseAddress(raw.xdsAddr, '--xds-addr'),
    adminAddr: parseAddress(raw.adminAddr, '--admin-addr'),
    metadata,
    ...(raw.xdsCert &&
      raw.xdsKey &&
      raw.xdsCa && { tls: { cert: raw.xdsCert, key: raw.xdsKey, ca: raw.xdsCa } }),
    maxConnections: parsePositiveInt(raw.maxConnections, '--max-connections'),
    ...(raw.locality && { locality: { region, zone, subzone } }),
    ...(certDir && { certDir }),
    ...(raw.xdsTls && { xdsTls: true }),
    kind: raw.kind,
    trustDomain: checkedTrustDomain(raw.trustDomain ?? DEFAULT_TRUST_DOMAIN),
  };
}

function checkedTrustDomain(trustDomain: string): string {
  try {
    return validateTrustDomain(trustDomain);
  } catch (err) {
    if (err instanceof IdentityError) throw new OptionError(`--trust-domain: ${err.message}`);
    throw err;
  }
}

const collect = (value: string, previous: string[]): string[] => [...previous, value];

export function addBootstrapCommand(program: Command): void {
  program
    .command('bootstrap')
    .description(
      'Print an Envoy v3 bootstrap (JSON or YAML) that points Envoy at Portolan over ADS, or with --kind grpc a proxyless gRPC bootstrap (JSON).',
    )
    .option('--node-id <id>', 'node id: Istio form sidecar~IP~NAME~DOMAIN / router~IP~NAME~DOMAIN, or any id')
    .option('--cluster <name>', 'node cluster (service-cluster); default: the NAME part of the id, or the id')
    .option('--namespace <ns>', 'NAMESPACE metadata', 'default')
    .option('--xds-addr <host:port>', 'where Portolan serves ADS', '127.0.0.1:15010')
    .option('--admin-addr <host:port>', "Envoy's admin listener", '127.0.0.1:15000')
    .option('--format <format>', 'json or yaml', 'json')
    .option('--outbound <modes>', 'PORTOLAN_OUTBOUND: comma list of transparent, explicit, http-proxy')
    .option('--outbound-policy <policy>', 'PORTOLAN_OUTBOUND_POLICY: ALLOW_ANY or REGISTRY_ONLY')
    .option('--upstream <HOST:PORT=[BIND:]LOCALPORT>', 'an explicit upstream (repeatable)', collect, [])
    .option(
      '--app-port <PORT=APPPORT>',
      'where the app listens for an endpoint port (repeatable)',
      collect,
      [],
    )
    .option('--http-proxy-port <port>', 'PORTOLAN_HTTP_PROXY_PORT (http-proxy mode; default 15080)')
    .option('--interception-mode <mode>', 'INTERCEPTION_MODE: REDIRECT, TPROXY or NONE')
    .option(
      '--label <KEY=VALUE>',
      'a LABELS entry (repeatable; gateways are selected by labels)',
      collect,
      [],
    )
    .option('--instance-ips <ips>', 'INSTANCE_IPS: the workload IPs, comma-separated')
    .option('--service-account <name>', 'SERVICE_ACCOUNT')
    .option('--locality <region/zone/subzone>', 'node locality')
    .option('--xds-cert <file>', 'client certificate for TLS to the xDS server (with --xds-key, --xds-ca)')
    .option('--xds-key <file>', 'client private key')
    .option('--xds-ca <file>', 'root certificate(s) that sign the xDS server')
    .option(
      '--cert-dir <dir>',
      'the workload certificate directory (`portolan cert --out`): Envoy SDS files / gRPC file_watcher provider',
    )
    .option(
      '--xds-tls',
      "mTLS to the xDS server (the secure port) with the files in --cert-dir; the server must carry the control plane's SPIFFE ID",
    )
    .option(
      '--trust-domain <domain>',
      'SPIFFE trust domain (as given to serve): names the control plane identity --xds-tls checks',
      DEFAULT_TRUST_DOMAIN,
    )
    .option('--kind <kind>', 'envoy, or grpc for a proxyless gRPC bootstrap', 'envoy')
    .option('--max-connections <n>', 'overload limit on downstream connections', '50000')
    .action((raw: RawBootstrapOptions) => {
      try {
        const options = compileBootstrapOptions(raw);
        if (options.kind === 'grpc') {
          if (raw.format !== 'json') throw new OptionError('a gRPC bootstrap is JSON: drop --format');
          process.stdout.write(`${JSON.stringify(buildGrpcBootstrap(options), null, 2)}\n`);
          return;
        }
        const bootstrap = dropUndefined(buildBootstrap(options));
        const problems = validateBootstrap(bootstrap);
        if (problems.length > 0)
          throw new OptionError(`bootstrap fails validation:\n  ${problems.join('\n  ')}`);
        process.stdout.write(
          raw.format === 'yaml' ? stringify(bootstrap) : `${JSON.stringify(bootstrap, null, 2)}\n`,
        );
      } catch (err) {
        if (err instanceof OptionError) program.error(`error: ${err.message}`, { exitCode: 2 });
        throw err;
      }
    });
}

function dropUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}
