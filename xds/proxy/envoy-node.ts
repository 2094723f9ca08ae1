// What an Envoy node tells us about itself in its metadata: Istio's keys (LABELS, SERVICE_ACCOUNT,
// INTERCEPTION_MODE) and Portolan's own keys for the outbound modes (docs/envoy.md lists them all).
// Anything malformed is a NodeError: the stream is refused with INVALID_ARGUMENT, nothing else is hurt.
import { isIP } from 'node:net';
import { NodeError } from './node-error.js';
import { CERT_DIR_META, DEFAULT_CERT_DIR, SDS_CLUSTER_META } from '../../mesh/workload-certs.js';

/** How the proxy's own outbound traffic reaches it. Several may be on at once. */
export type OutboundMode = 'transparent' | 'explicit' | 'http-proxy';
export const OUTBOUND_MODES: readonly OutboundMode[] = ['transparent', 'explicit', 'http-proxy'];

export type OutboundPolicy = 'ALLOW_ANY' | 'REGISTRY_ONLY';
export type InterceptionMode = 'REDIRECT' | 'TPROXY' | 'NONE';

/** One declared upstream: the app connects to bind:localPort, Envoy forwards to hostname:port. */
export interface Upstream {
  readonly hostname: string;
  readonly port: number;
  readonly bind: string;
  readonly localPort: number;
}

export interface EnvoyNode {
  /** `router` (a gateway) or `sidecar`; from the id's TYPE field, default sidecar. */
  readonly role: 'sidecar' | 'router';
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceAccount: string;
  readonly interceptionMode: InterceptionMode;
  readonly outboundModes: readonly OutboundMode[];
  readonly outboundPolicy: OutboundPolicy;
  readonly upstreams: readonly Upstream[];
  readonly httpProxyPort: number;
  /** Where the local application listens for an endpoint port (default: 127.0.0.1, same port). */
  readonly appPorts: Readonly<Record<number, number>>;
  /** Where `portolan cert` keeps this node's certificate files (for workload mTLS). */
  readonly certDir: string;
  /** The bootstrap cluster serving SDS (`portolan agent`), or '' for the files in certDir. */
  readonly sdsCluster: string;
  /**
   * DNS_AUTO_ALLOCATE (Istio's name; `portolan agent` sets it with its DNS proxy on): a captured TCP
   * service without an address gets a listener on its auto-allocated one, which the DNS proxy answers.
   */
  readonly dnsAutoAllocate: boolean;
}

export const DEFAULT_HTTP_PROXY_PORT = 15080;

/** Metadata keys Portolan defines (Istio's are read under their own names). */
export const META = {
  outbound: 'PORTOLAN_OUTBOUND',
  outboundPolicy: 'PORTOLAN_OUTBOUND_POLICY',
  upstreams: 'PORTOLAN_UPSTREAMS',
  httpProxyPort: 'PORTOLAN_HTTP_PROXY_PORT',
  appPorts: 'PORTOLAN_APP_PORTS',
  certDir: CERT_DIR_META,
  sdsCluster: SDS_CLUSTER_META,
} as const;

export function parseEnvoyNode(idType: string | undefined, metadata: Record<string, unknown>): EnvoyNode {
  const interceptionMode = parseEnum<InterceptionMode>(
    metadata.INTERCEPTION_MODE,
    'INTERCEPTION_MODE',
    ['REDIRECT', 'TPROXY', 'NONE'],
    'NONE',
  );
  const upstreams = parseUpstreams(metadata[META.upstreams]);
  return {
    role: idType === 'router' ? 'router' : 'sidecar',
    labels: parseLabels(metadata.LABELS),
    serviceAccount: optionalString(metadata.SERVICE_ACCOUNT, 'SERVICE_ACCOUNT'),
    interceptionMode,
    outboundModes: parseModes(metadata[META.outbound], interceptionMode),
    outboundPolicy: parseEnum<OutboundPolicy>(
      metadata[META.outboundPolicy],
      META.outboundPolicy,
      ['ALLOW_ANY', 'REGISTRY_ONLY'],
      'ALLOW_ANY',
    ),
    upstreams,
    httpProxyPort:
      metadata[META.httpProxyPort] === undefined
        ? DEFAULT_HTTP_PROXY_PORT
        : parsePort(metadata[META.httpProxyPort], META.httpProxyPort),
    appPorts: parseAppPorts(metadata[META.appPorts]),
    certDir: parseCertDir(metadata[META.certDir]),
    sdsCluster: parseClusterName(metadata[META.sdsCluster]),
    dnsAutoAllocate:
      parseEnum(metadata.DNS_AUTO_ALLOCATE, 'DNS_AUTO_ALLOCATE', ['true', 'false'], 'false') === 'true',
  };
}

function parseClusterName(value: unknown): string {
  const name = optionalString(value, META.sdsCluster);
  if (name !== '' && !/^[A-Za-z0-9_.:-]{1,200}$/.test(name))
    throw new NodeError(`${META.sdsCluster}: "${name}" is not a cluster name`);
  return name;
}

// Absolute: Envoy resolves SDS file paths against its own working directory.
function parseCertDir(value: unknown): string {
  const dir = optionalString(value, META.certDir);
  if (dir === '') return DEFAULT_CERT_DIR;
  if (!dir.startsWith('/')) throw new NodeError(`${META.certDir}: "${dir}" is not an absolute path`);
  return dir.length > 1 ? dir.replace(/\/+$/, '') : dir;
}

// Default: iptables capture if the node says it is intercepted (Istio's INTERCEPTION_MODE), else
// explicit upstreams — a VM without iptables rules only gets traffic on ports it was told about.
function parseModes(value: unknown, interception: InterceptionMode): OutboundMode[] {
  if (value === undefined) return interception === 'NONE' ? ['explicit'] : ['transparent'];
  const items = listOf(value, META.outbound);
  const modes: OutboundMode[] = [];
  for (const item of items) {
    if (!OUTBOUND_MODES.includes(item as OutboundMode))
      throw new NodeError(`${META.outbound}: "${item}" is not one of ${OUTBOUND_MODES.join(', ')}`);
    if (!modes.includes(item as OutboundMode)) modes.push(item as OutboundMode);
  }
  if (modes.length === 0) throw new NodeError(`${META.outbound}: empty`);
  return modes;
}

/** `HOST:PORT=LOCALPORT` or `HOST:PORT=BIND:LOCALPORT`, comma-separated or as a list. */
function parseUpstreams(value: unknown): Upstream[] {
  if (value === undefined) return [];
  const seen = new Set<string>();
  return listOf(value, META.upstreams).map((item) => {
    const m = /^([^\s:=]+):(\d+)=(?:([^\s=]+):)?(\d+)$/.exec(item);
    if (!m) throw new NodeError(`${META.upstreams}: "${item}" is not HOST:PORT=[BIND:]LOCALPORT`);
    const bind = m[3] ?? '127.0.0.1';
    if (!isIP(bind)) throw new NodeError(`${META.upstreams}: "${bind}" in "${item}" is not an IP address`);
    const upstream = {
      hostname: m[1] ?? '',
      port: parsePort(m[2], META.upstreams),
      bind,
      localPort: parsePort(m[4], META.upstreams),
    };
    const key = `${bind}:${upstream.localPort}`;
    if (seen.has(key)) throw new NodeError(`${META.upstreams}: local address ${key} is used twice`);
    seen.add(key);
    return upstream;
  });
}

/** `ENDPOINTPORT=APPPORT`, comma-separated or as a list. */
function parseAppPorts(value: unknown): Record<number, number> {
  const out: Record<number, number> = {};
  if (value === undefined) return out;
  for (const item of listOf(value, META.appPorts)) {
    const [from, to, ...rest] = item.split('=');
    if (rest.length > 0 || to === undefined)
      throw new NodeError(`${META.appPorts}: "${item}" is not PORT=APPPORT`);
    out[parsePort(from, META.appPorts)] = parsePort(to, META.appPorts);
  }
  return out;
}

function parseLabels(value: unknown): Record<string, string> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new NodeError('LABELS must be a map of strings');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new NodeError(`LABELS.${k} must be a string`);
    out[k] = v;
  }
  return out;
}

function listOf(value: unknown, key: string): string[] {
  if (typeof value === 'string')
    return value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  if (Array.isArray(value) && value.every((v): v is string => typeof v === 'string'))
    return value.map((s) => s.trim());
  throw new NodeError(`${key} must be a comma-separated string or a list of strings`);
}

function parseEnum<T extends string>(value: unknown, key: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined || value === '') return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw new NodeError(`${key}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
}

function optionalString(value: unknown, key: string): string {
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new NodeError(`${key} must be a string`);
  return value;
}

function parsePort(value: unknown, key: string): number {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65535)
    throw new NodeError(`${key}: ${JSON.stringify(value)} is not a port (1-65535)`);
  return Number(text);
}
