// DestinationRule: validated and kept for the traffic-management work (host, subsets, traffic policy).
import type { DestinationRuleSpec, TrafficPolicy } from '../../mesh/types.js';
import { duration, hostOrWildcard, parseDuration, portSelector, stringMap } from './common.js';
import { localityLbSetting } from './locality-lb-setting.js';
import {
  arrayOf,
  atMostOne,
  bool,
  int,
  NOT_IMPLEMENTED,
  num,
  obj,
  oneOf,
  str,
  type Check,
} from './schema.js';

const INT32 = 2_147_483_647;
const UINT32 = 4_294_967_295;
const count = int(0, INT32);
/** Envoy's and gRPC's upper bound for a hash ring. */
export const MAX_RING_SIZE = 8_388_608;

/** A duration of at least `minMs` (Envoy refuses a zero connect timeout or ejection interval). */
function durationAtLeast(minMs: number, what: string): Check<string> {
  return (value, path, problems) => {
    const text = duration(value, path, problems);
    if (text === undefined) return undefined;
    if ((parseDuration(text) ?? 0) < minMs) {
      problems.error(path, `must be at least ${what}, got ${JSON.stringify(text)}`);
      return undefined;
    }
    return text;
  };
}
const positiveDuration = durationAtLeast(1, '1ms');
const wholeSeconds = durationAtLeast(1000, '1s (TCP keepalive counts in seconds)');

/**
 * Slow start (`warmup`) is not rendered, but its values are checked as Istio's schema checks them
 * (a duration is required, minimumPercent 0..100, aggression at least 1): Istio rejects a bad one.
 */
const warmup = obj(
  { duration, minimumPercent: num(0, 100), aggression: num(1, Number.MAX_VALUE) },
  { required: ['duration'] },
);

/** An Istio field Portolan ignores (a warning naming it) whose value is still checked. */
function ignoredButChecked<T>(check: Check<T>): Check<T> {
  return (value, path, problems) => {
    check(value, path, problems);
    problems.warn(path, NOT_IMPLEMENTED);
    return undefined;
  };
}

const consistentHash = obj(
  {
    httpHeaderName: str({ nonEmpty: true }),
    httpCookie: obj(
      { name: str({ nonEmpty: true }), path: str(), ttl: duration },
      { required: ['name'], message: 'ConsistentHashLB.HTTPCookie' },
    ),
    useSourceIp: bool,
    httpQueryParameterName: str({ nonEmpty: true }),
    minimumRingSize: int(0, MAX_RING_SIZE),
  },
  {
    message: 'LoadBalancerSettings.ConsistentHashLB',
    refine: (h, path, problems) => {
      const keys = ['httpHeaderName', 'httpCookie', 'useSourceIp', 'httpQueryParameterName'] as const;
      if (keys.every((k) => h[k] === undefined))
        problems.error(path, `one of ${keys.join(', ')} is required`);
      atMostOne(h, keys, path, problems);
    },
  },
);

const loadBalancer = obj(
  {
    simple: oneOf(['UNSPECIFIED', 'LEAST_CONN', 'RANDOM', 'PASSTHROUGH', 'ROUND_ROBIN', 'LEAST_REQUEST']),
    consistentHash,
    localityLbSetting,
    warmupDurationSecs: duration,
    warmup: ignoredButChecked(warmup),
  },
  {
    message: 'LoadBalancerSettings',
    refine: (lb, path, problems) => atMostOne(lb, ['simple', 'consistentHash'], path, problems),
  },
);

const connectionPool = obj(
  {
    tcp: obj(
      {
        maxConnections: count,
        connectTimeout: positiveDuration,
        tcpKeepalive: obj(
          { probes: int(0, UINT32), time: wholeSeconds, interval: wholeSeconds },
          { message: 'TCPSettings.TcpKeepalive' },
        ),
        maxConnectionDuration: duration,
        idleTimeout: duration,
      },
      { message: 'ConnectionPoolSettings.TCPSettings' },
    ),
    http: obj(
      {
        http1MaxPendingRequests: count,
        http2MaxRequests: count,
        maxRequestsPerConnection: count,
        maxRetries: count,
        idleTimeout: duration,
        h2UpgradePolicy: oneOf(['DEFAULT', 'DO_NOT_UPGRADE', 'UPGRADE']),
        useClientProtocol: bool,
        maxConcurrentStreams: count,
      },
      { message: 'ConnectionPoolSettings.HTTPSettings' },
    ),
  },
  { message: 'ConnectionPoolSettings' },
);

const outlierDetection = obj(
  {
    consecutiveErrors: count,
    consecutive5xxErrors: int(0, UINT32),
    consecutiveGatewayErrors: int(0, UINT32),
    consecutiveLocalOriginFailures: int(0, UINT32),
    splitExternalLocalOriginErrors: bool,
    interval: positiveDuration,
    baseEjectionTime: positiveDuration,
    maxEjectionPercent: int(0, 100),
    minHealthPercent: int(0, 100),
  },
  { message: 'OutlierDetection' },
);

const tls = obj(
  {
    mode: oneOf(['DISABLE', 'SIMPLE', 'MUTUAL', 'ISTIO_MUTUAL']),
    clientCertificate: str(),
    privateKey: str(),
    caCertificates: str(),
    credentialName: str(),
    subjectAltNames: arrayOf(str()),
    sni: str(),
    insecureSkipVerify: bool,
  },
  {
    required: ['mode'],
    message: 'ClientTLSSettings',
    refine: (t, path, problems) => {
      if (t.mode === 'MUTUAL' && !t.credentialName) {
        if (!t.clientCertificate)
          problems.error(
            [...path, 'clientCertificate'],
            'is required for mode MUTUAL without credentialName',
          );
        if (!t.privateKey)
          problems.error([...path, 'privateKey'], 'is required for mode MUTUAL without credentialName');
      }
    },
  },
);

const portTrafficPolicy = obj(
  { port: portSelector, loadBalancer, connectionPool, outlierDetection, tls },
  { required: ['port'], message: 'TrafficPolicy.PortTrafficPolicy' },
);

const trafficPolicy: Check<TrafficPolicy> = obj(
  { loadBalancer, connectionPool, outlierDetection, tls, portLevelSettings: arrayOf(portTrafficPolicy) },
  {
    message: 'TrafficPolicy',
    refine: (policy, path, problems) => {
      const seen = new Set<number>();
      policy.portLevelSettings?.forEach((setting, i) => {
        const n = setting.port?.number;
        if (n === undefined) return;
        if (seen.has(n))
          problems.error([...path, 'portLevelSettings', i, 'port', 'number'], `duplicate port ${n}`);
        seen.add(n);
      });
    },
  },
);

const subsetName = str({
  test: (s) =>
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(s)
      ? undefined
      : `must be a DNS-1123 label, got ${JSON.stringify(s)}`,
});

// A subset without labels (or with `labels: {}`) is every endpoint of the host, as in Istio: its
// egress gateway task names one only to give it a traffic policy.
const subset = obj(
  { name: subsetName, labels: stringMap, trafficPolicy },
  { required: ['name'], message: 'Subset' },
);

export const destinationRuleSpec: Check<DestinationRuleSpec> = obj(
  {
    host: hostOrWildcard,
    trafficPolicy,
    subsets: arrayOf(subset),
    exportTo: arrayOf(str()),
    workloadSelector: obj(
      { matchLabels: stringMap },
      { required: ['matchLabels'], message: 'DestinationRule.WorkloadSelector' },
    ),
  },
  {
    required: ['host'],
    message: 'DestinationRule',
    refine: (dr, path, problems) => {
      const seen = new Set<string>();
      dr.subsets?.forEach((s, i) => {
        if (s.name === undefined) return;
        if (seen.has(s.name))
          problems.error([...path, 'subsets', i, 'name'], `duplicate subset name ${JSON.stringify(s.name)}`);
        seen.add(s.name);
      });
    },
  },
);
