// A rich mesh for the Envoy generator tests: HTTP, gRPC and TCP services, DNS and NONE resolution,
// sidecars in every outbound mode, a gateway with a bound VirtualService, DestinationRules with
// every cluster-side policy and subsets, a Sidecar scoping one namespace's proxies, and
// VirtualServices using every route feature Envoy renders, routing to subsets (so validity.test.ts
// checks them all). `collect` plays an
// Envoy's ADS session: LDS and CDS wildcard, then the RDS and EDS names they reference.
import { buildCatalog, type Catalog } from '../../../model/catalog.js';
import type { Endpoint } from '../../../model/endpoint.js';
import type { Service } from '../../../model/service.js';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type {
  ConfigKind,
  DestinationRuleSpec,
  GatewaySpec,
  SidecarSpec,
  VirtualServiceSpec,
} from '../../../mesh/types.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { GeneratorTable } from '../../../xds/generators/index.js';
import { envoyResourceSet } from '../../../xds/validate/envoy-resource-set.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { proxyFromNode, type Proxy } from '../../../xds/proxy/proxy.js';
import type { EncodedResource } from '../../../xds/proto/resource.js';
import { configResource } from '../../support/mesh-fixtures.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

export const WEB = 'web.mesh.internal';
export const SHOP = 'shop.mesh.internal';
export const ECHO = 'echo.mesh.internal';
export const DB = 'db.mesh.internal';
export const CACHE = 'cache.mesh.internal';
export const API = 'api.example.com';
export const LEGACY = 'legacy.dns.internal';
export const ORIGINAL = 'original.none.internal';
/** HTTP service routed by a VirtualService using every HTTP route feature. */
export const REVIEWS = 'reviews.mesh.internal';
/** TCP service whose VirtualService splits connections by weight. */
export const LEDGER = 'ledger.mesh.internal';
/** The VM the sidecars run on: it hosts a WEB endpoint and an ECHO endpoint. */
export const VM_IP = '10.0.0.1';

export function fixtureCatalog(): Catalog {
  const services: Service[] = [
    service(WEB, [servicePort('http', 8080, 'HTTP')], { addresses: ['240.0.0.10'] }),
    service(SHOP, [servicePort('http', 8080, 'HTTP'), servicePort('admin', 9901, 'HTTP2')]),
    service(ECHO, [servicePort('grpc', 7070, 'GRPC')]),
    service(DB, [servicePort('pg', 5432, 'TCP')], { addresses: ['240.0.0.20'] }),
    service(CACHE, [servicePort('redis', 6379, 'REDIS')]),
    service(API, [servicePort('https', 443, 'TLS')], { resolution: 'DNS', location: 'MESH_EXTERNAL' }),
    service(LEGACY, [servicePort('http', 80, 'HTTP')], { resolution: 'DNS' }),
    service(ORIGINAL, [servicePort('tcp', 9000, 'TCP')], { resolution: 'NONE' }),
    service(REVIEWS, [servicePort('http', 9080, 'HTTP')]),
    service(LEDGER, [servicePort('tcp', 7000, 'TCP')], { addresses: ['240.0.0.30'] }),
  ];
  const endpoints = new Map<string, Endpoint[]>([
    [WEB, [endpoint(VM_IP, { http: 8080 }), endpoint('10.0.0.2', { http: 8080 })]],
    [SHOP, [endpoint('10.0.0.3', { http: 8081, admin: 9901 })]],
    [
      ECHO,
      [
        endpoint(VM_IP, { grpc: 7070 }, { labels: { version: 'v1' } }),
        endpoint('10.0.0.4', { grpc: 7070 }, { weight: 3, labels: { version: 'v2' } }),
      ],
    ],
    [DB, [endpoint('10.0.0.5', { pg: 5432 })]],
    [CACHE, [endpoint('10.0.0.6', { redis: 6379 })]],
    [API, []],
    [
      LEGACY,
      [
        endpoint('old-1.dns.internal', { http: 80 }, { labels: { rack: 'a' } }),
        endpoint('old-2.dns.internal', { http: 80 }, { labels: { rack: 'b' } }),
      ],
    ],
    [
      REVIEWS,
      [
        endpoint('10.0.0.11', { http: 9080 }, { labels: { version: 'v1' } }),
        endpoint('10.0.0.12', { http: 9080 }, { labels: { version: 'v2' } }),
      ],
    ],
    [LEDGER, [endpoint('10.0.0.8', { tcp: 7000 })]],
  ]);
  return buildCatalog(services, endpoints);
}

function resource<K extends ConfigKind, T>(kind: K, name: string, spec: T, namespace = 'default') {
  return configResource(kind, name, spec, namespace, 'fixture.yaml');
}

export const INGRESS_LABELS = { istio: 'ingressgateway' };

export function fixtureMeshConfig(): MeshConfig {
  return {
    generation: 1,
    peerAuthentications: [],
    authorizationPolicies: [],
    requestAuthentications: [],
    destinationRules: [
      ...fixtureDestinationRules(),
      resource<'DestinationRule', DestinationRuleSpec>('DestinationRule', 'reviews', {
        host: REVIEWS,
        trafficPolicy: { loadBalancer: { consistentHash: { httpCookie: { name: 'user', ttl: '10s' } } } },
        subsets: [
          { name: 'v1', labels: { version: 'v1' } },
          { name: 'v2', labels: { version: 'v2' } },
        ],
      }),
      resource<'DestinationRule', DestinationRuleSpec>('DestinationRule', 'shop', {
        host: SHOP,
        trafficPolicy: { loadBalancer: { consistentHash: { httpHeaderName: 'x-user' } } },
      }),
    ],
    sidecars: [
      resource<'Sidecar', SidecarSpec>(
        'Sidecar',
        'default',
        {
          egress: [{ hosts: ['./*', `default/${ECHO}`, `default/${WEB}`, 'default/*.dns.internal'] }],
          outboundTrafficPolicy: { mode: 'REGISTRY_ONLY' },
        },
        SCOPED_NAMESPACE,
      ),
    ],
    gateways: [
      resource<'Gateway', GatewaySpec>('Gateway', 'ingress', {
        selector: INGRESS_LABELS,
        servers: [
          { port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] },
          {
            port: { number: 443, name: 'https', protocol: 'HTTPS' },
            hosts: ['shop.example.com'],
            tls: {
              mode: 'SIMPLE',
              serverCertificate: '/etc/certs/shop.pem',
              privateKey: '/etc/certs/shop.key',
            },
          },
          { port: { number: 5432, name: 'pg', protocol: 'TCP' }, hosts: ['*'] },
          { port: { number: 7000, name: 'ledger', protocol: 'TCP' }, hosts: ['ledger.example.com'] },
        ],
      }),
      resource<'Gateway', GatewaySpec>('Gateway', 'other', {
        selector: { istio: 'egressgateway' },
        servers: [{ port: { number: 8443, name: 'x', protocol: 'HTTP' }, hosts: ['*'] }],
      }),
    ],
    virtualServices: [
      resource<'VirtualService', VirtualServiceSpec>('VirtualService', 'shop', {
        hosts: ['shop.example.com'],
        gateways: ['ingress'],
        http: [
          {
            match: [{ uri: { prefix: '/echo' } }],
            route: [
              { destination: { host: ECHO }, weight: 80 },
              { destination: { host: WEB, port: { number: 8080 } }, weight: 20 },
            ],
          },
          {
            match: [{ headers: { 'x-echo-version': { exact: 'v2' } } }],
            route: [{ destination: { host: ECHO, subset: 'v2' } }],
          },
          { route: [{ destination: { host: SHOP, port: { number: 8080 } } }] },
        ],
      }),
      resource<'VirtualService', VirtualServiceSpec>('VirtualService', 'db', {
        hosts: ['db.example.com'],
        gateways: ['default/ingress'],
        tcp: [{ route: [{ destination: { host: DB } }] }],
      }),
      resource<'VirtualService', VirtualServiceSpec>('VirtualService', 'mesh-only', {
        hosts: [WEB],
        http: [{ route: [{ destination: { host: WEB } }] }],
      }),
      resource<'VirtualService', VirtualServiceSpec>('VirtualService', 'reviews', REVIEWS_VS),
      resource<'VirtualService', VirtualServiceSpec>('VirtualService', 'ledger-gw', {
        hosts: ['ledger.example.com'],
        gateways: ['ingress'],
        tcp: [
          {
            route: [
              { destination: { host: LEDGER }, weight: 60 },
              { destination: { host: DB }, weight: 40 },
            ],
          },
        ],
      }),
      resource<'VirtualService', VirtualServiceSpec>('VirtualService', 'ledger', {
        hosts: [LEDGER],
        tcp: [
          {
            route: [
              { destination: { host: LEDGER }, weight: 75 },
              { destination: { host: DB, port: { number: 5432 } }, weight: 25 },
            ],
          },
        ],
      }),
    ],
  };
}

/** Every HTTP route feature Envoy renders, in one VirtualService. */
export const REVIEWS_VS: VirtualServiceSpec = {
  hosts: [REVIEWS],
  http: [
    {
      name: 'canary',
      match: [
        { name: 'by-header', headers: { 'x-canary': { exact: 'yes' } }, uri: { prefix: '/api' } },
        { name: 'by-query', queryParams: { canary: {} }, method: { exact: 'GET' } },
        { name: 'by-regex', uri: { regex: '/v[0-9]+/.*' }, ignoreUriCase: true },
        { name: 'without', withoutHeaders: { 'x-legacy': { prefix: 'old' } }, uri: { exact: '/exact' } },
      ],
      route: [
        {
          destination: { host: REVIEWS, subset: 'v1' },
          weight: 90,
          headers: { request: { set: { 'x-split': 'a' } } },
        },
        { destination: { host: SHOP, port: { number: 8080 } }, weight: 10 },
      ],
      timeout: '2s',
      retries: { attempts: 3, perTryTimeout: '500ms', retryOn: '5xx,503,unavailable' },
      fault: {
        delay: { fixedDelay: '50ms', percentage: { value: 1.5 } },
        abort: { httpStatus: 503, percentage: { value: 0.1 } },
      },
      mirror: { host: REVIEWS, subset: 'v2' },
      mirrorPercentage: { value: 25 },
      rewrite: { uri: '/new', authority: 'reviews.internal' },
      headers: {
        request: { set: { 'x-route': 'canary' }, add: { 'x-trace': '1' }, remove: ['x-drop'] },
        response: { remove: ['server'] },
      },
    },
    {
      match: [{ uri: { prefix: '/old' } }],
      redirect: { uri: '/new', authority: 'reviews.internal', redirectCode: 308 },
    },
    { match: [{ uri: { prefix: '/gone' } }], directResponse: { status: 410, body: { string: 'gone' } } },
    {
      match: [{ uri: { prefix: '/grpc' } }],
      fault: { abort: { grpcStatus: 'UNAVAILABLE' } },
      route: [{ destination: { host: REVIEWS, subset: 'v2' } }],
    },
    {
      match: [{ uri: { prefix: '/rx' } }],
      rewrite: { uriRegexRewrite: { match: '^/rx/(.*)', rewrite: '/\\1' } },
      route: [{ destination: { host: REVIEWS } }],
    },
    { route: [{ destination: { host: REVIEWS } }] },
  ],
};

/** The namespace whose Sidecar admits only ECHO, WEB and the *.dns.internal services of `default`. */
export const SCOPED_NAMESPACE = 'scoped';

/** Every cluster-side field of a DestinationRule, on the fixture's services. */
export function fixtureDestinationRules() {
  const dr = (name: string, spec: DestinationRuleSpec) =>
    resource<'DestinationRule', DestinationRuleSpec>('DestinationRule', name, spec);
  return [
    dr('echo', {
      host: ECHO,
      trafficPolicy: {
        loadBalancer: { consistentHash: { httpHeaderName: 'x-user', minimumRingSize: 2048 } },
        connectionPool: {
          tcp: {
            maxConnections: 100,
            connectTimeout: '250ms',
            tcpKeepalive: { probes: 3, time: '60s', interval: '10s' },
          },
          http: {
            http2MaxRequests: 500,
            maxRequestsPerConnection: 10,
            maxConcurrentStreams: 50,
            maxRetries: 2,
          },
        },
        outlierDetection: {
          consecutive5xxErrors: 3,
          consecutiveGatewayErrors: 2,
          interval: '5s',
          baseEjectionTime: '1m',
          maxEjectionPercent: 50,
          minHealthPercent: 20,
        },
      },
      subsets: [
        { name: 'v1', labels: { version: 'v1' } },
        {
          name: 'v2',
          labels: { version: 'v2' },
          trafficPolicy: { loadBalancer: { simple: 'LEAST_REQUEST' } },
        },
      ],
    }),
    dr('web', {
      host: WEB,
      trafficPolicy: {
        loadBalancer: { simple: 'RANDOM' },
        portLevelSettings: [
          {
            port: { number: 8080 },
            connectionPool: {
              http: { h2UpgradePolicy: 'UPGRADE', http1MaxPendingRequests: 10, idleTimeout: '30s' },
            },
          },
        ],
      },
    }),
    dr('legacy', {
      host: LEGACY,
      trafficPolicy: {
        connectionPool: {
          tcp: { maxConnectionDuration: '1h' },
          http: { useClientProtocol: true, maxConcurrentStreams: 8 },
        },
        outlierDetection: {
          consecutiveErrors: 6,
          consecutiveLocalOriginFailures: 4,
          splitExternalLocalOriginErrors: true,
        },
      },
      subsets: [{ name: 'rack-a', labels: { rack: 'a' } }],
    }),
    dr('cache', { host: CACHE, trafficPolicy: { loadBalancer: { simple: 'PASSTHROUGH' } } }),
  ];
}

export function envoyProxy(id: string, metadata: Record<string, unknown> = {}): Proxy {
  return proxyFromNode({ id, cluster: 'test', user_agent_name: 'envoy', metadata });
}

/** The proxies of the fixture: one per outbound mode, policy and interception, plus the gateway. */
export function fixtureProxies(): Record<string, Proxy> {
  return {
    transparent: envoyProxy(`sidecar~${VM_IP}~web-1~default.svc`, { INTERCEPTION_MODE: 'REDIRECT' }),
    registryOnly: envoyProxy(`sidecar~${VM_IP}~web-1~default.svc`, {
      INTERCEPTION_MODE: 'TPROXY',
      PORTOLAN_OUTBOUND_POLICY: 'REGISTRY_ONLY',
    }),
    explicit: envoyProxy('web-1', {
      INSTANCE_IPS: VM_IP,
      PORTOLAN_UPSTREAMS: `${ECHO}:7070=17070,${DB}:5432=15432,${WEB}:8080=127.0.0.2:18080,missing.internal:80=19000,${REVIEWS}:9080=19080,${LEDGER}:7000=17000`,
      PORTOLAN_APP_PORTS: '8080=18081',
    }),
    httpProxy: envoyProxy('web-2', { INSTANCE_IPS: '10.0.0.9', PORTOLAN_OUTBOUND: 'http-proxy' }),
    allModes: envoyProxy(`sidecar~${VM_IP}~web-1~default.svc`, {
      PORTOLAN_OUTBOUND: 'transparent,explicit,http-proxy',
      PORTOLAN_UPSTREAMS: [`${ECHO}:7070=17070`],
      PORTOLAN_HTTP_PROXY_PORT: '15081',
    }),
    gateway: envoyProxy('router~10.0.1.1~ingress-1~default.svc', { LABELS: INGRESS_LABELS }),
    scoped: envoyProxy('sidecar~10.0.0.7~scoped-1~scoped.svc', {
      NAMESPACE: SCOPED_NAMESPACE,
      PORTOLAN_OUTBOUND: 'transparent,explicit,http-proxy',
      PORTOLAN_UPSTREAMS: `${ECHO}:7070=17070,${DB}:5432=15432`,
    }),
  };
}

export type Collected = Map<string, EncodedResource[]>;

/** What an Envoy subscribed the usual way would hold: LDS/CDS wildcard, then referenced RDS and EDS. */
export function collect(proxy: Proxy, catalog: Catalog, config: MeshConfig = fixtureMeshConfig()): Collected {
  return envoyResourceSet(
    new GeneratorTable(envoyGenerators(), false),
    generateContext({ proxy, catalog, config }),
  );
}

/** Decoded resources of one type, by name. */
export function decodedByName(collected: Collected, typeUrl: string): Map<string, Record<string, unknown>> {
  return new Map((collected.get(typeUrl) ?? []).map((r) => [r.name, decodeAny(r.typeUrl, r.value)] as const));
}
