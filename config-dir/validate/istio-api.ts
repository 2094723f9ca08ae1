// The Istio API, written once: every message type of the supported kinds (istio.io/latest
// reference; field lists checked against the CRDs of istio/istio at 86c9f01, see
// test/compat/README.md) with each field's status in Portolan. The validators' `obj()` checks
// name their message here, and this table decides what a field their shape lacks is:
//   translated  rendered; the shape must check it (obj() refuses to build otherwise)
//   ignored     an Istio field Portolan does not implement: a warning that names it (networking)
//   unsupported refused with a message saying so (security kinds, where an ignored field can open
//               access; and networking fields whose absence would change what a request gets)
// `grpc` says what proxyless gRPC clients get of a translated field (default: the same as Envoy).
// docs/istio-compatibility.md's field table is generated from this file (tools/istio-compat-doc.mjs).

export type FieldStatus = 'translated' | 'ignored' | 'unsupported';

export interface FieldSpec {
  readonly status: FieldStatus;
  /** For proxyless gRPC: `false` (not rendered) or a note; absent = as for Envoy. */
  readonly grpc?: false | string;
  /** Why a field is ignored or unsupported, shown in the message and the doc. */
  readonly reason?: string;
}

const T: FieldSpec = { status: 'translated' };
const ENVOY: FieldSpec = { status: 'translated', grpc: false };
const envoy = (grpc: string): FieldSpec => ({ status: 'translated', grpc });
const IGNORED: FieldSpec = { status: 'ignored' };
const ignored = (reason: string): FieldSpec => ({ status: 'ignored', reason });
const unsupported = (reason: string): FieldSpec => ({ status: 'unsupported', reason });
/** Names only the registry reads (no proxy config of their own). */
const REG: FieldSpec = T;

const K8S_TARGET = unsupported(
  'selects Kubernetes Gateway API gateways and waypoints, which Portolan does not serve: use selector.matchLabels with the workload labels',
);
const NOT_TRANSLATED = 'Portolan does not translate it, and ignoring it could widen the policy';

export interface MessageSpec {
  /** The kind this message is part of (for the doc). */
  readonly kind: string;
  readonly fields: Readonly<Record<string, FieldSpec>>;
}

const m = (kind: string, fields: Record<string, FieldSpec>): MessageSpec => ({ kind, fields });

const STRING_MATCH = { exact: T, prefix: T, regex: T };
const HEADER_OPS = { set: ENVOY, add: ENVOY, remove: ENVOY };

export const ISTIO_API = {
  // ---- networking.istio.io: VirtualService -------------------------------------------------
  VirtualService: m('VirtualService', {
    hosts: T,
    gateways: envoy('mesh only'),
    http: T,
    tls: envoy('no (gRPC is HTTP/2 only); gateways: TLS passthrough to the first destination'),
    tcp: ENVOY,
    exportTo: T,
  }),
  HTTPRoute: m('VirtualService', {
    name: T,
    match: T,
    route: T,
    redirect: envoy('no: the route is left out'),
    directResponse: envoy('no: the route is left out'),
    delegate: unsupported(
      'VirtualService delegation (a route handing over to another VirtualService) is not supported: write the routes in one VirtualService',
    ),
    rewrite: ENVOY,
    timeout: envoy('max_stream_duration (gRFC A31)'),
    retries: envoy('gRPC status conditions only, at most 4 retries (gRFC A44)'),
    fault: envoy('yes (gRFC A33)'),
    mirror: ENVOY,
    mirrors: ENVOY,
    mirrorPercent: ENVOY,
    mirror_percent: ignored('deprecated in Istio: use mirrorPercentage'),
    mirrorPercentage: ENVOY,
    corsPolicy: ignored('CORS is not rendered'),
    headers: ENVOY,
  }),
  HTTPMatchRequest: m('VirtualService', {
    name: T,
    uri: T,
    scheme: envoy('no: the match never applies'),
    method: envoy('decided against POST'),
    authority: envoy('no: the match never applies'),
    headers: T,
    port: T,
    sourceLabels: T,
    gateways: T,
    queryParams: envoy('no: the match never applies'),
    ignoreUriCase: T,
    withoutHeaders: T,
    sourceNamespace: T,
    statPrefix: ignored('per-route stats are not rendered'),
  }),
  StringMatch: m('VirtualService', STRING_MATCH),
  HTTPRouteDestination: m('VirtualService', { destination: T, weight: T, headers: ENVOY }),
  RouteDestination: m('VirtualService', { destination: T, weight: T }),
  Destination: m('VirtualService', { host: T, subset: T, port: T }),
  PortSelector: m('VirtualService', { number: T }),
  Headers: m('VirtualService', { request: ENVOY, response: ENVOY }),
  HeaderOperations: m('VirtualService', HEADER_OPS),
  L4MatchAttributes: m('VirtualService', {
    destinationSubnets: ENVOY,
    port: ENVOY,
    sourceSubnet: IGNORED,
    sourceLabels: ENVOY,
    gateways: ENVOY,
    sourceNamespace: ENVOY,
  }),
  TLSMatchAttributes: m('VirtualService', {
    sniHosts: ENVOY,
    destinationSubnets: ENVOY,
    port: ENVOY,
    sourceLabels: ENVOY,
    gateways: ENVOY,
    sourceNamespace: ENVOY,
  }),
  TCPRoute: m('VirtualService', { match: ENVOY, route: ENVOY }),
  TLSRoute: m('VirtualService', { match: ENVOY, route: ENVOY }),
  HTTPRedirect: m('VirtualService', {
    uri: ENVOY,
    authority: ENVOY,
    port: ENVOY,
    derivePort: ENVOY,
    scheme: ENVOY,
    redirectCode: ENVOY,
    prefixRewrite: unsupported('a redirect without it would send clients to another path'),
  }),
  HTTPDirectResponse: m('VirtualService', { status: ENVOY, body: ENVOY }),
  HTTPBody: m('VirtualService', { string: ENVOY, bytes: ENVOY }),
  HTTPRewrite: m('VirtualService', { uri: ENVOY, authority: ENVOY, uriRegexRewrite: ENVOY }),
  RegexRewrite: m('VirtualService', { match: ENVOY, rewrite: ENVOY }),
  HTTPRetry: m('VirtualService', {
    attempts: T,
    perTryTimeout: envoy('no'),
    retryOn: envoy('gRPC status conditions only'),
    retryRemoteLocalities: T,
    retryIgnorePreviousHosts: IGNORED,
    backoff: IGNORED,
  }),
  CorsPolicy: m('VirtualService', {
    allowOrigin: IGNORED,
    allowOrigins: IGNORED,
    allowMethods: IGNORED,
    allowHeaders: IGNORED,
    exposeHeaders: IGNORED,
    maxAge: IGNORED,
    allowCredentials: IGNORED,
    unmatchedPreflights: IGNORED,
  }),
  HTTPFaultInjection: m('VirtualService', { delay: T, abort: T }),
  'HTTPFaultInjection.Delay': m('VirtualService', {
    fixedDelay: T,
    exponentialDelay: IGNORED,
    percentage: T,
    percent: ignored('deprecated in Istio: use percentage'),
  }),
  'HTTPFaultInjection.Abort': m('VirtualService', {
    httpStatus: T,
    grpcStatus: T,
    http2Error: IGNORED,
    percentage: T,
  }),
  HTTPMirrorPolicy: m('VirtualService', { destination: ENVOY, percentage: ENVOY }),
  Percent: m('VirtualService', { value: T }),

  // ---- DestinationRule ---------------------------------------------------------------------
  DestinationRule: m('DestinationRule', {
    host: T,
    trafficPolicy: T,
    subsets: T,
    exportTo: T,
    workloadSelector: T,
  }),
  'DestinationRule.WorkloadSelector': m('DestinationRule', { matchLabels: T }),
  TrafficPolicy: m('DestinationRule', {
    loadBalancer: T,
    connectionPool: T,
    outlierDetection: envoy('no: gRPC cannot count consecutive errors'),
    tls: T,
    portLevelSettings: T,
    tunnel: IGNORED,
    proxyProtocol: IGNORED,
    retryBudget: IGNORED,
  }),
  'TrafficPolicy.PortTrafficPolicy': m('DestinationRule', {
    port: T,
    loadBalancer: T,
    connectionPool: T,
    outlierDetection: envoy('no'),
    tls: T,
  }),
  Subset: m('DestinationRule', { name: T, labels: T, trafficPolicy: T }),
  LoadBalancerSettings: m('DestinationRule', {
    simple: envoy('ROUND_ROBIN for LEAST_REQUEST, RANDOM, PASSTHROUGH'),
    consistentHash: envoy('header hashing only (gRFC A42)'),
    localityLbSetting: T,
    warmupDurationSecs: ignored('slow start is not rendered'),
    warmup: ignored('slow start is not rendered'),
    zoneAwareLbSetting: IGNORED,
    backendUtilization: IGNORED,
  }),
  'LoadBalancerSettings.ConsistentHashLB': m('DestinationRule', {
    httpHeaderName: T,
    httpCookie: envoy('no'),
    useSourceIp: envoy('no'),
    httpQueryParameterName: envoy('no'),
    ringHash: IGNORED,
    maglev: IGNORED,
    minimumRingSize: T,
  }),
  'ConsistentHashLB.HTTPCookie': m('DestinationRule', {
    name: ENVOY,
    path: ENVOY,
    ttl: ENVOY,
    attributes: IGNORED,
  }),
  ConnectionPoolSettings: m('DestinationRule', { tcp: T, http: T }),
  'ConnectionPoolSettings.TCPSettings': m('DestinationRule', {
    maxConnections: ENVOY,
    connectTimeout: ENVOY,
    tcpKeepalive: ENVOY,
    maxConnectionDuration: ENVOY,
    idleTimeout: ENVOY,
  }),
  'TCPSettings.TcpKeepalive': m('DestinationRule', { probes: ENVOY, time: ENVOY, interval: ENVOY }),
  'ConnectionPoolSettings.HTTPSettings': m('DestinationRule', {
    http1MaxPendingRequests: ENVOY,
    http2MaxRequests: envoy('max_requests (gRFC A32)'),
    maxRequestsPerConnection: ENVOY,
    maxRetries: ENVOY,
    idleTimeout: ENVOY,
    h2UpgradePolicy: ENVOY,
    useClientProtocol: ENVOY,
    maxConcurrentStreams: ENVOY,
    http2KeepAlive: IGNORED,
  }),
  OutlierDetection: m('DestinationRule', {
    splitExternalLocalOriginErrors: ENVOY,
    consecutiveLocalOriginFailures: ENVOY,
    consecutiveGatewayErrors: ENVOY,
    consecutive5xxErrors: ENVOY,
    interval: ENVOY,
    baseEjectionTime: ENVOY,
    maxEjectionPercent: ENVOY,
    minHealthPercent: ENVOY,
    consecutiveErrors: ENVOY,
    outlierDetectionHttpErrorCodes: IGNORED,
  }),
  ClientTLSSettings: m('DestinationRule', {
    mode: T,
    clientCertificate: T,
    privateKey: T,
    caCertificates: T,
    credentialName: T,
    subjectAltNames: T,
    sni: T,
    insecureSkipVerify: T,
    caCrl: IGNORED,
  }),
  LocalityLoadBalancerSetting: m('DestinationRule', {
    distribute: T,
    failover: T,
    failoverPriority: T,
    enabled: T,
  }),
  'LocalityLoadBalancerSetting.Distribute': m('DestinationRule', { from: T, to: T }),
  'LocalityLoadBalancerSetting.Failover': m('DestinationRule', { from: T, to: T }),

  // ---- Gateway -----------------------------------------------------------------------------
  Gateway: m('Gateway', { servers: ENVOY, selector: ENVOY }),
  Server: m('Gateway', {
    port: ENVOY,
    bind: ENVOY,
    hosts: ENVOY,
    tls: ENVOY,
    defaultEndpoint: ENVOY,
    name: ENVOY,
  }),
  Port: m('Gateway', { number: ENVOY, protocol: ENVOY, name: ENVOY, targetPort: ENVOY }),
  ServerTLSSettings: m('Gateway', {
    httpsRedirect: ENVOY,
    mode: ENVOY,
    serverCertificate: ENVOY,
    privateKey: ENVOY,
    caCertificates: ENVOY,
    caCrl: IGNORED,
    credentialName: ENVOY,
    credentialNames: IGNORED,
    caCertCredentialName: IGNORED,
    tlsCertificates: IGNORED,
    subjectAltNames: ENVOY,
    verifyCertificateSpki: IGNORED,
    verifyCertificateHash: IGNORED,
    minProtocolVersion: ENVOY,
    maxProtocolVersion: ENVOY,
    cipherSuites: ENVOY,
    ecdhCurves: IGNORED,
    insecureSkipVerify: IGNORED,
  }),

  // ---- ServiceEntry, WorkloadEntry, WorkloadGroup ------------------------------------------
  ServiceEntry: m('ServiceEntry', {
    hosts: REG,
    addresses: REG,
    ports: REG,
    location: REG,
    resolution: REG,
    endpoints: REG,
    workloadSelector: REG,
    exportTo: REG,
    subjectAltNames: REG,
  }),
  ServicePort: m('ServiceEntry', { number: REG, protocol: REG, name: REG, targetPort: REG }),
  'ServiceEntry.WorkloadSelector': m('ServiceEntry', { labels: REG }),
  WorkloadEntry: m('WorkloadEntry', {
    address: REG,
    ports: REG,
    labels: REG,
    network: REG,
    locality: REG,
    weight: REG,
    serviceAccount: REG,
  }),
  WorkloadGroup: m('WorkloadGroup', { metadata: REG, template: REG, probe: REG }),
  'WorkloadGroup.ObjectMeta': m('WorkloadGroup', { labels: REG, annotations: REG }),
  ReadinessProbe: m('WorkloadGroup', {
    initialDelaySeconds: REG,
    timeoutSeconds: REG,
    periodSeconds: REG,
    successThreshold: REG,
    failureThreshold: REG,
    httpGet: REG,
    tcpSocket: REG,
    exec: REG,
    grpc: REG,
  }),
  HTTPGetAction: m('WorkloadGroup', { path: REG, port: REG, host: REG, scheme: REG, httpHeaders: REG }),
  HTTPHeader: m('WorkloadGroup', { name: REG, value: REG }),
  TCPSocketAction: m('WorkloadGroup', { port: REG, host: REG }),
  GrpcAction: m('WorkloadGroup', { port: REG, service: REG }),
  ExecAction: m('WorkloadGroup', { command: REG }),

  // ---- Sidecar -----------------------------------------------------------------------------
  Sidecar: m('Sidecar', {
    workloadSelector: ENVOY,
    ingress: IGNORED,
    egress: envoy('no: gRPC clients are not scoped'),
    inboundConnectionPool: IGNORED,
    outboundTrafficPolicy: ENVOY,
  }),
  'Sidecar.WorkloadSelector': m('Sidecar', { labels: ENVOY }),
  IstioEgressListener: m('Sidecar', { port: ENVOY, bind: ENVOY, captureMode: ENVOY, hosts: ENVOY }),
  SidecarPort: m('Sidecar', { number: ENVOY, protocol: ENVOY, name: ENVOY, targetPort: IGNORED }),
  OutboundTrafficPolicy: m('Sidecar', { mode: ENVOY, egressProxy: IGNORED }),

  // ---- security.istio.io -------------------------------------------------------------------
  'security.WorkloadSelector': m('AuthorizationPolicy', { matchLabels: T }),
  AuthorizationPolicy: m('AuthorizationPolicy', {
    selector: T,
    targetRef: K8S_TARGET,
    targetRefs: K8S_TARGET,
    rules: T,
    action: T,
    provider: unsupported('is for action CUSTOM, which Portolan does not support'),
  }),
  Rule: m('AuthorizationPolicy', { from: T, to: T, when: T }),
  'Rule.From': m('AuthorizationPolicy', { source: T }),
  'Rule.To': m('AuthorizationPolicy', { operation: T }),
  Source: m('AuthorizationPolicy', {
    principals: T,
    notPrincipals: T,
    requestPrincipals: envoy('no: an ALLOW rule using it never matches'),
    notRequestPrincipals: envoy('no'),
    namespaces: T,
    notNamespaces: T,
    serviceAccounts: T,
    notServiceAccounts: T,
    trustDomains: unsupported(NOT_TRANSLATED),
    notTrustDomains: unsupported(NOT_TRANSLATED),
    ipBlocks: T,
    notIpBlocks: T,
    remoteIpBlocks: T,
    notRemoteIpBlocks: T,
  }),
  Operation: m('AuthorizationPolicy', {
    hosts: T,
    notHosts: T,
    ports: T,
    notPorts: T,
    methods: T,
    notMethods: T,
    paths: T,
    notPaths: T,
  }),
  Condition: m('AuthorizationPolicy', { key: T, values: T, notValues: T }),
  PeerAuthentication: m('PeerAuthentication', { selector: T, mtls: T, portLevelMtls: T }),
  'PeerAuthentication.MutualTLS': m('PeerAuthentication', { mode: T }),
  RequestAuthentication: m('RequestAuthentication', {
    selector: ENVOY,
    targetRef: K8S_TARGET,
    targetRefs: K8S_TARGET,
    jwtRules: envoy('no: no JWT filter exists for proxyless gRPC'),
  }),
  JWTRule: m('RequestAuthentication', {
    issuer: ENVOY,
    audiences: ENVOY,
    jwksUri: ENVOY,
    jwks_uri: unsupported('write jwksUri'),
    jwks: ENVOY,
    fromHeaders: ENVOY,
    fromParams: ENVOY,
    fromCookies: ENVOY,
    outputPayloadToHeader: ENVOY,
    outputClaimToHeaders: ENVOY,
    forwardOriginalToken: ENVOY,
    timeout: ENVOY,
    presence: unsupported(NOT_TRANSLATED.replace('widen the policy', 'change which requests pass')),
    spaceDelimitedClaims: unsupported(
      'Portolan does not translate it (scope and permission are always split on spaces, as in Istio)',
    ),
  }),
  JWTHeader: m('RequestAuthentication', { name: ENVOY, prefix: ENVOY }),
  ClaimToHeader: m('RequestAuthentication', { header: ENVOY, claim: ENVOY }),
} as const satisfies Record<string, MessageSpec>;

export type IstioMessage = keyof typeof ISTIO_API;

export const NOT_IMPLEMENTED = 'an Istio field Portolan does not implement; ignored';
export const NOT_SUPPORTED = 'an Istio field Portolan does not support';
