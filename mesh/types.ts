// The shapes the config directory accepts: Istio's networking.istio.io resources, as validated.
// Field names follow Istio's API so existing manifests load unchanged; durations stay strings
// (`1.5s`, `100ms`) as written and are parsed with `parseDuration` where they are used.
import type { Protocol } from '../model/service.js';
import type { AuthorizationPolicySpec, RequestAuthenticationSpec } from './security-types.js';
import type { ConfigKind, KindLists } from './config-kinds.js';

export const SUPPORTED_API_VERSIONS = [
  'networking.istio.io/v1',
  'networking.istio.io/v1beta1',
  'networking.istio.io/v1alpha3',
] as const;

/** security.istio.io versions, for PeerAuthentication, AuthorizationPolicy and RequestAuthentication. */
export const SECURITY_API_VERSIONS = ['security.istio.io/v1', 'security.istio.io/v1beta1'] as const;

/** The kinds Portolan serves: named once, in the table of config kinds. */
export type { ConfigKind } from './config-kinds.js';

/** One validated resource, with where it came from (path relative to the watched directory, 1-based line). */
export interface ConfigResource<T, K extends ConfigKind = ConfigKind> {
  readonly kind: K;
  readonly apiVersion: string;
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly spec: T;
  readonly file: string;
  readonly line: number;
}

export type ServiceEntryResource = ConfigResource<ServiceEntrySpec, 'ServiceEntry'>;
export type WorkloadEntryResource = ConfigResource<WorkloadEntrySpec, 'WorkloadEntry'>;
export type WorkloadGroupResource = ConfigResource<WorkloadGroupSpec, 'WorkloadGroup'>;
export type VirtualServiceResource = ConfigResource<VirtualServiceSpec, 'VirtualService'>;
export type DestinationRuleResource = ConfigResource<DestinationRuleSpec, 'DestinationRule'>;
export type GatewayResource = ConfigResource<GatewaySpec, 'Gateway'>;
export type SidecarResource = ConfigResource<SidecarSpec, 'Sidecar'>;
export type PeerAuthenticationResource = ConfigResource<PeerAuthenticationSpec, 'PeerAuthentication'>;
export type AuthorizationPolicyResource = ConfigResource<AuthorizationPolicySpec, 'AuthorizationPolicy'>;
export type RequestAuthenticationResource = ConfigResource<
  RequestAuthenticationSpec,
  'RequestAuthentication'
>;
/** A resource of any kind: the union of the table's lists (mesh/config-kinds.ts). */
export type AnyConfigResource = KindLists[keyof KindLists][number];

/** `Kind/namespace/name`: the identity of a resource across files. */
export function resourceKey(r: { kind: string; namespace: string; name: string }): string {
  return `${r.kind}/${r.namespace}/${r.name}`;
}

// ---- WorkloadEntry ---------------------------------------------------------------------------

export interface WorkloadEntrySpec {
  /** IP, DNS name (only for DNS-resolved services) or `unix:///absolute/path`. */
  readonly address: string;
  /** Target port per service port name. */
  readonly ports?: Readonly<Record<string, number>>;
  readonly labels?: Readonly<Record<string, string>>;
  readonly network?: string;
  /** `region/zone/subzone`. */
  readonly locality?: string;
  readonly weight?: number;
  readonly serviceAccount?: string;
}

// ---- WorkloadGroup ---------------------------------------------------------------------------

/** What the WorkloadEntries a group creates start from: a WorkloadEntry without its address. */
export type WorkloadTemplate = Omit<WorkloadEntrySpec, 'address'>;

export interface HttpHeader {
  readonly name: string;
  readonly value?: string;
}

/** Istio's ReadinessProbe: exactly one of httpGet, tcpSocket, grpc, exec. Times in seconds. */
export interface ReadinessProbe {
  readonly initialDelaySeconds?: number;
  readonly timeoutSeconds?: number;
  readonly periodSeconds?: number;
  readonly successThreshold?: number;
  readonly failureThreshold?: number;
  readonly httpGet?: {
    readonly path?: string;
    readonly port: number;
    /** Defaults to the workload's own address. */
    readonly host?: string;
    readonly scheme?: 'HTTP' | 'HTTPS';
    readonly httpHeaders?: readonly HttpHeader[];
  };
  readonly tcpSocket?: { readonly host?: string; readonly port: number };
  readonly grpc?: { readonly port: number; readonly service?: string };
  readonly exec?: { readonly command: readonly string[] };
}

export interface WorkloadGroupSpec {
  /** Labels and annotations of the WorkloadEntries the group creates. */
  readonly metadata?: {
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  /** Absent: entries with no ports, labels or service account of their own. */
  readonly template?: WorkloadTemplate;
  readonly probe?: ReadinessProbe;
}

// ---- ServiceEntry ----------------------------------------------------------------------------

export type ServiceEntryResolution = 'NONE' | 'STATIC' | 'DNS' | 'DNS_ROUND_ROBIN';
export type ServiceEntryLocation = 'MESH_EXTERNAL' | 'MESH_INTERNAL';

export interface ServiceEntryPort {
  readonly number: number;
  /** Normalised to upper case; absent means TCP. */
  readonly protocol?: Protocol;
  readonly name: string;
  readonly targetPort?: number;
}

export interface ServiceEntrySpec {
  readonly hosts: readonly string[];
  readonly addresses?: readonly string[];
  readonly ports: readonly ServiceEntryPort[];
  readonly location?: ServiceEntryLocation;
  readonly resolution?: ServiceEntryResolution;
  readonly endpoints?: readonly WorkloadEntrySpec[];
  readonly workloadSelector?: { readonly labels: Readonly<Record<string, string>> };
  readonly exportTo?: readonly string[];
  readonly subjectAltNames?: readonly string[];
}

// ---- VirtualService --------------------------------------------------------------------------

/** Exactly one of exact / prefix / regex. */
export interface StringMatch {
  readonly exact?: string;
  readonly prefix?: string;
  readonly regex?: string;
}

export interface PortSelector {
  readonly number: number;
}

export interface Destination {
  readonly host: string;
  readonly subset?: string;
  readonly port?: PortSelector;
}

export interface HeaderOperations {
  readonly set?: Readonly<Record<string, string>>;
  readonly add?: Readonly<Record<string, string>>;
  readonly remove?: readonly string[];
}

export interface Headers {
  readonly request?: HeaderOperations;
  readonly response?: HeaderOperations;
}

export interface Percent {
  /** 0..100. */
  readonly value: number;
}

export interface HTTPMatchRequest {
  readonly name?: string;
  readonly uri?: StringMatch;
  readonly scheme?: StringMatch;
  readonly method?: StringMatch;
  readonly authority?: StringMatch;
  readonly headers?: Readonly<Record<string, StringMatch>>;
  readonly port?: number;
  readonly sourceLabels?: Readonly<Record<string, string>>;
  readonly gateways?: readonly string[];
  readonly queryParams?: Readonly<Record<string, StringMatch>>;
  readonly ignoreUriCase?: boolean;
  readonly withoutHeaders?: Readonly<Record<string, StringMatch>>;
  readonly sourceNamespace?: string;
}

export interface HTTPRouteDestination {
  readonly destination: Destination;
  /** 0..100; may be omitted for a single destination (then it takes all traffic). */
  readonly weight?: number;
  readonly headers?: Headers;
}

export interface HTTPRedirect {
  readonly uri?: string;
  readonly authority?: string;
  readonly port?: number;
  readonly derivePort?: 'FROM_PROTOCOL_DEFAULT' | 'FROM_REQUEST_PORT';
  readonly scheme?: string;
  readonly redirectCode?: number;
}

export interface HTTPDirectResponse {
  readonly status: number;
  readonly body?: { readonly string?: string; readonly bytes?: string };
}

export interface RegexRewrite {
  readonly match: string;
  readonly rewrite: string;
}

export interface HTTPRewrite {
  readonly uri?: string;
  readonly authority?: string;
  readonly uriRegexRewrite?: RegexRewrite;
}

export interface HTTPRetry {
  readonly attempts?: number;
  readonly perTryTimeout?: string;
  readonly retryOn?: string;
  readonly retryRemoteLocalities?: boolean;
}

export interface HTTPFaultInjection {
  readonly delay?: { readonly fixedDelay: string; readonly percentage?: Percent };
  readonly abort?: {
    readonly httpStatus?: number;
    readonly grpcStatus?: string;
    readonly percentage?: Percent;
  };
}

export interface CorsPolicy {
  readonly allowOrigins?: readonly StringMatch[];
  readonly allowMethods?: readonly string[];
  readonly allowHeaders?: readonly string[];
  readonly exposeHeaders?: readonly string[];
  readonly maxAge?: string;
  readonly allowCredentials?: boolean;
}

export interface HTTPMirrorPolicy {
  readonly destination: Destination;
  readonly percentage?: Percent;
}

export interface HTTPRoute {
  readonly name?: string;
  readonly match?: readonly HTTPMatchRequest[];
  readonly route?: readonly HTTPRouteDestination[];
  readonly redirect?: HTTPRedirect;
  readonly directResponse?: HTTPDirectResponse;
  readonly rewrite?: HTTPRewrite;
  readonly timeout?: string;
  readonly retries?: HTTPRetry;
  readonly fault?: HTTPFaultInjection;
  readonly mirror?: Destination;
  /** Istio's deprecated whole-number form of `mirrorPercentage`; `mirrorPercentage` wins when both are set. */
  readonly mirrorPercent?: number;
  readonly mirrorPercentage?: Percent;
  readonly mirrors?: readonly HTTPMirrorPolicy[];
  readonly corsPolicy?: CorsPolicy;
  readonly headers?: Headers;
}

export interface L4MatchAttributes {
  readonly destinationSubnets?: readonly string[];
  readonly port?: number;
  readonly sourceLabels?: Readonly<Record<string, string>>;
  readonly gateways?: readonly string[];
  readonly sourceNamespace?: string;
}

export interface TLSMatchAttributes extends L4MatchAttributes {
  readonly sniHosts: readonly string[];
}

export interface RouteDestination {
  readonly destination: Destination;
  readonly weight?: number;
}

export interface TCPRoute {
  readonly match?: readonly L4MatchAttributes[];
  readonly route: readonly RouteDestination[];
}

export interface TLSRoute {
  readonly match: readonly TLSMatchAttributes[];
  readonly route: readonly RouteDestination[];
}

export interface VirtualServiceSpec {
  readonly hosts: readonly string[];
  readonly gateways?: readonly string[];
  readonly http?: readonly HTTPRoute[];
  readonly tls?: readonly TLSRoute[];
  readonly tcp?: readonly TCPRoute[];
  readonly exportTo?: readonly string[];
}

// ---- DestinationRule -------------------------------------------------------------------------

export type SimpleLB =
  'UNSPECIFIED' | 'LEAST_CONN' | 'RANDOM' | 'PASSTHROUGH' | 'ROUND_ROBIN' | 'LEAST_REQUEST';

export interface ConsistentHashLB {
  readonly httpHeaderName?: string;
  readonly httpCookie?: { readonly name: string; readonly path?: string; readonly ttl?: string };
  readonly useSourceIp?: boolean;
  readonly httpQueryParameterName?: string;
  readonly minimumRingSize?: number;
}

export interface LocalityLbSetting {
  readonly distribute?: readonly { readonly from: string; readonly to: Readonly<Record<string, number>> }[];
  readonly failover?: readonly { readonly from: string; readonly to: string }[];
  readonly failoverPriority?: readonly string[];
  readonly enabled?: boolean;
}

export interface LoadBalancerSettings {
  readonly simple?: SimpleLB;
  readonly consistentHash?: ConsistentHashLB;
  readonly localityLbSetting?: LocalityLbSetting;
  readonly warmupDurationSecs?: string;
}

export interface ConnectionPoolSettings {
  readonly tcp?: {
    readonly maxConnections?: number;
    readonly connectTimeout?: string;
    readonly tcpKeepalive?: { readonly probes?: number; readonly time?: string; readonly interval?: string };
    readonly maxConnectionDuration?: string;
    readonly idleTimeout?: string;
  };
  readonly http?: {
    readonly http1MaxPendingRequests?: number;
    readonly http2MaxRequests?: number;
    readonly maxRequestsPerConnection?: number;
    readonly maxRetries?: number;
    readonly idleTimeout?: string;
    readonly h2UpgradePolicy?: 'DEFAULT' | 'DO_NOT_UPGRADE' | 'UPGRADE';
    readonly useClientProtocol?: boolean;
    readonly maxConcurrentStreams?: number;
  };
}

export interface OutlierDetection {
  readonly consecutiveErrors?: number;
  readonly consecutive5xxErrors?: number;
  readonly consecutiveGatewayErrors?: number;
  readonly consecutiveLocalOriginFailures?: number;
  readonly splitExternalLocalOriginErrors?: boolean;
  readonly interval?: string;
  readonly baseEjectionTime?: string;
  readonly maxEjectionPercent?: number;
  readonly minHealthPercent?: number;
}

export type ClientTLSMode = 'DISABLE' | 'SIMPLE' | 'MUTUAL' | 'ISTIO_MUTUAL';

export interface ClientTLSSettings {
  readonly mode: ClientTLSMode;
  readonly clientCertificate?: string;
  readonly privateKey?: string;
  readonly caCertificates?: string;
  readonly credentialName?: string;
  readonly subjectAltNames?: readonly string[];
  readonly sni?: string;
  readonly insecureSkipVerify?: boolean;
}

export interface PortTrafficPolicy {
  readonly port: PortSelector;
  readonly loadBalancer?: LoadBalancerSettings;
  readonly connectionPool?: ConnectionPoolSettings;
  readonly outlierDetection?: OutlierDetection;
  readonly tls?: ClientTLSSettings;
}

export interface TrafficPolicy {
  readonly loadBalancer?: LoadBalancerSettings;
  readonly connectionPool?: ConnectionPoolSettings;
  readonly outlierDetection?: OutlierDetection;
  readonly tls?: ClientTLSSettings;
  readonly portLevelSettings?: readonly PortTrafficPolicy[];
}

export interface Subset {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly trafficPolicy?: TrafficPolicy;
}

export interface DestinationRuleSpec {
  readonly host: string;
  readonly trafficPolicy?: TrafficPolicy;
  readonly subsets?: readonly Subset[];
  readonly exportTo?: readonly string[];
  readonly workloadSelector?: { readonly matchLabels: Readonly<Record<string, string>> };
}

// ---- Gateway ----------------------------------------------------------------------------------

export type ServerTLSMode =
  'PASSTHROUGH' | 'SIMPLE' | 'MUTUAL' | 'AUTO_PASSTHROUGH' | 'ISTIO_MUTUAL' | 'OPTIONAL_MUTUAL';

export interface ServerTLSSettings {
  readonly httpsRedirect?: boolean;
  readonly mode?: ServerTLSMode;
  /** Files on the gateway's machine (Portolan has no Kubernetes secrets to read `credentialName` from). */
  readonly serverCertificate?: string;
  readonly privateKey?: string;
  readonly caCertificates?: string;
  readonly subjectAltNames?: readonly string[];
  readonly minProtocolVersion?: string;
  readonly maxProtocolVersion?: string;
  readonly cipherSuites?: readonly string[];
}

export interface GatewayPort {
  readonly number: number;
  /** HTTP, HTTPS, GRPC, HTTP2, MONGO, TCP or TLS. */
  readonly protocol: string;
  readonly name?: string;
  readonly targetPort?: number;
}

export interface GatewayServer {
  readonly port: GatewayPort;
  /** `host`, `*.suffix`, `*`, optionally prefixed `namespace/` (which namespaces' VirtualServices may bind). */
  readonly hosts: readonly string[];
  readonly tls?: ServerTLSSettings;
  readonly bind?: string;
  readonly name?: string;
}

export interface GatewaySpec {
  /** Which gateway proxies (by their LABELS) serve these servers; all of them when absent. */
  readonly selector?: Readonly<Record<string, string>>;
  readonly servers: readonly GatewayServer[];
}

// ---- Sidecar ----------------------------------------------------------------------------------

export interface IstioEgressListener {
  /** `namespace/host`: namespace `.` (the Sidecar's own), `*` (any) or a name; host `*`, `*.suffix` or a name. */
  readonly hosts: readonly string[];
  /** When set, the entry applies to services' ports with this number only. */
  readonly port?: { readonly number: number; readonly protocol?: string; readonly name?: string };
  readonly bind?: string;
  readonly captureMode?: 'DEFAULT' | 'IPTABLES' | 'NONE';
}

export interface SidecarSpec {
  /** The proxies (by their labels, in the Sidecar's namespace) it applies to; all of the namespace when absent. */
  readonly workloadSelector?: { readonly labels: Readonly<Record<string, string>> };
  readonly egress?: readonly IstioEgressListener[];
  readonly outboundTrafficPolicy?: { readonly mode: 'ALLOW_ANY' | 'REGISTRY_ONLY' };
}

// ---- PeerAuthentication (security.istio.io) ---------------------------------------------------

export type MtlsMode = 'UNSET' | 'DISABLE' | 'PERMISSIVE' | 'STRICT';

export interface PeerAuthenticationSpec {
  /** Which workloads (by their labels) in the namespace; the whole namespace when absent. */
  readonly selector?: { readonly matchLabels: Readonly<Record<string, string>> };
  readonly mtls?: { readonly mode?: MtlsMode };
  /** By workload port (the port the workload listens on); needs a selector, as in Istio. */
  readonly portLevelMtls?: Readonly<Record<string, { readonly mode?: MtlsMode }>>;
}
