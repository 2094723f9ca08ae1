// The nodes the golden files are written for: each kind of proxy Portolan serves, on the fixture
// meshes of the generator tests (test/unit/envoy/fixture-mesh.ts for Envoy and traffic rules,
// test/support/grpc-fixture-mesh.ts for proxyless gRPC), with workload mTLS off and on.
import type { Catalog } from '../../model/catalog.js';
import type { MeshConfig } from '../../mesh/mesh-config.js';
import type {
  DestinationRuleResource,
  PeerAuthenticationResource,
  PeerAuthenticationSpec,
} from '../../mesh/types.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../../xds/generators/grpc/server-listener.js';
import type { NodeInfo } from '../../xds/proxy/proxy.js';
import { LISTENER } from '../../xds/proto/type-urls.js';
import {
  CATALOG_IP,
  INGRESS_LABELS as AUTHZ_INGRESS_LABELS,
  LEDGER_IP,
  PAYMENTS_IP,
  authzFixtureCatalog,
  authzFixtureConfig,
} from '../support/authz-fixture-mesh.js';
import { ONE, grpcFixtureCatalog } from '../support/grpc-fixture-mesh.js';
import {
  NODE_LOCALITY,
  NODE_NETWORK,
  localityCatalog,
  localityDestinationRules,
} from '../support/locality-fixture-mesh.js';
import { configResource } from '../support/mesh-fixtures.js';
import {
  ECHO,
  INGRESS_LABELS,
  REVIEWS,
  SCOPED_NAMESPACE,
  VM_IP,
  fixtureCatalog,
  fixtureMeshConfig,
} from '../unit/envoy/fixture-mesh.js';

export interface GoldenCase {
  /** The folder under test/golden/. */
  readonly name: string;
  /** What the node is, for a reviewer (written into node.json). */
  readonly about: string;
  /** The node as its first DiscoveryRequest carries it. */
  readonly node: NodeInfo;
  readonly catalog: Catalog;
  readonly config: MeshConfig;
  readonly trustDomain?: string;
  /**
   * Names asked for by name, per type URL, besides what wildcards and references give. Envoy asks
   * for LDS and CDS as wildcards; a gRPC client asks for its targets' listeners by name.
   */
  readonly named: Readonly<Partial<Record<string, readonly string[]>>>;
  /** gRPC: also resolve the LDS and CDS wildcards (every target the node could dial). */
  readonly wildcard: boolean;
}

const CERT_DIR = '/etc/portolan/certs';

function envoyNode(id: string, metadata: Record<string, unknown>): NodeInfo {
  return { id, cluster: 'test', user_agent_name: 'envoy', metadata };
}

function grpcNode(id: string, metadata: Record<string, unknown> = {}): NodeInfo {
  return {
    id,
    cluster: 'test',
    user_agent_name: 'gRPC Node Pure JS',
    metadata: { NAMESPACE: 'default', ...metadata },
    locality: { region: 'r1', zone: 'z1' },
  };
}

function serverListener(address: string): string {
  return GRPC_SERVER_LISTENER_TEMPLATE.replace('%s', address);
}

// Each config gets its own generation: generators memoise by it, as they do per serving generation.
let generation = 100;

function meshConfig(parts: Partial<Omit<MeshConfig, 'generation'>> = {}): MeshConfig {
  generation += 1;
  return {
    virtualServices: [],
    destinationRules: [],
    gateways: [],
    sidecars: [],
    peerAuthentications: [],
    authorizationPolicies: [],
    requestAuthentications: [],
    ...parts,
    generation,
  };
}

function peerAuthentication(
  namespace: string,
  name: string,
  spec: PeerAuthenticationSpec,
): PeerAuthenticationResource {
  return {
    kind: 'PeerAuthentication',
    apiVersion: 'security.istio.io/v1',
    name,
    namespace,
    labels: {},
    annotations: {},
    spec,
    file: 'golden.yaml',
    line: 1,
  };
}

/** `rule` with `tls.mode: ISTIO_MUTUAL` added to its traffic policy. */
function istioMutual(rule: DestinationRuleResource): DestinationRuleResource {
  return {
    ...rule,
    spec: { ...rule.spec, trafficPolicy: { ...rule.spec.trafficPolicy, tls: { mode: 'ISTIO_MUTUAL' } } },
  };
}

function destinationRule(host: string, spec: Omit<DestinationRuleResource['spec'], 'host'>) {
  const rule: DestinationRuleResource = {
    kind: 'DestinationRule',
    apiVersion: 'networking.istio.io/v1',
    name: host.split('.')[0] ?? host,
    namespace: 'default',
    labels: {},
    annotations: {},
    spec: { host, ...spec },
    file: 'golden.yaml',
    line: 1,
  };
  return rule;
}

/** The fixture mesh with workload mTLS on: STRICT in `default` (PERMISSIVE on web's 8080), ISTIO_MUTUAL to echo. */
function fixtureMeshWithMtls(): MeshConfig {
  const base = fixtureMeshConfig();
  return meshConfig({
    ...base,
    destinationRules: base.destinationRules.map((r) => (r.spec.host === ECHO ? istioMutual(r) : r)),
    peerAuthentications: [
      peerAuthentication('default', 'default', { mtls: { mode: 'STRICT' } }),
      peerAuthentication('default', 'web', {
        selector: { matchLabels: { app: 'web' } },
        portLevelMtls: { '8080': { mode: 'PERMISSIVE' } },
      }),
    ],
  });
}

/** The fixture mesh with its ingress Gateway's HTTP server redirecting to https (`tls.httpsRedirect`). */
function fixtureMeshWithHttpsRedirect(): MeshConfig {
  const base = fixtureMeshConfig();
  return meshConfig({
    ...base,
    gateways: base.gateways.map((g) =>
      g.name !== 'ingress'
        ? g
        : {
            ...g,
            spec: {
              ...g.spec,
              servers: g.spec.servers.map((server) =>
                server.port.number === 80 ? { ...server, tls: { httpsRedirect: true } } : server,
              ),
            },
          },
    ),
  });
}

/**
 * The fixture mesh with a second DestinationRule for reviews (merged into the first: its v3 added,
 * its v1 skipped) and reviews routes to a subset and a host that have no cluster (BlackHoleCluster).
 */
function fixtureMeshWithMergeAndDangling(): MeshConfig {
  const base = fixtureMeshConfig();
  return meshConfig({
    ...base,
    destinationRules: [
      ...base.destinationRules,
      configResource('DestinationRule', 'reviews-v3', {
        host: REVIEWS,
        subsets: [
          { name: 'v1', labels: { version: 'nowhere' } },
          { name: 'v3', labels: { version: 'v3' } },
        ],
      }),
    ],
    virtualServices: base.virtualServices.map((vs) =>
      vs.name !== 'reviews'
        ? vs
        : {
            ...vs,
            spec: {
              ...vs.spec,
              http: [
                {
                  match: [{ headers: { to: { exact: 'v3' } } }],
                  route: [{ destination: { host: REVIEWS, subset: 'v3' } }],
                },
                {
                  match: [{ headers: { to: { exact: 'v9' } } }],
                  route: [{ destination: { host: REVIEWS, subset: 'v9' } }],
                },
                {
                  match: [{ headers: { to: { exact: 'ghost' } } }],
                  route: [{ destination: { host: 'ghost.mesh.internal' } }],
                },
                ...(vs.spec.http ?? []),
              ],
            },
          },
    ),
  });
}

export function goldenCases(): GoldenCase[] {
  const envoy = (
    name: string,
    about: string,
    node: NodeInfo,
    config: MeshConfig = meshConfig(fixtureMeshConfig()),
  ): GoldenCase => ({ name, about, node, catalog: fixtureCatalog(), config, named: {}, wildcard: true });
  const oneSubsets = destinationRule(ONE, {
    subsets: [
      { name: 'v1', labels: { version: 'v1' } },
      { name: 'v2', labels: { version: 'v2' } },
    ],
  });
  return [
    envoy(
      'envoy-gateway',
      'An Envoy gateway (router~ node) whose LABELS select the fixture Gateway `ingress`.',
      envoyNode('router~10.0.1.1~ingress-1~default.svc', { LABELS: INGRESS_LABELS }),
    ),
    envoy(
      'envoy-gateway-https-redirect',
      'The envoy-gateway node with the Gateway’s HTTP server on port 80 set to `tls.httpsRedirect: true`: a plain listener whose virtual hosts require TLS (Envoy answers 301 to https).',
      envoyNode('router~10.0.1.1~ingress-1~default.svc', { LABELS: INGRESS_LABELS }),
      fixtureMeshWithHttpsRedirect(),
    ),
    envoy(
      'envoy-sidecar-merged-rules',
      'The envoy-sidecar-transparent node with two DestinationRules for reviews (merged as Istio merges them) and reviews routes to an undefined subset and an unknown host (BlackHoleCluster).',
      envoyNode(`sidecar~${VM_IP}~web-1~default.svc`, { INTERCEPTION_MODE: 'REDIRECT' }),
      fixtureMeshWithMergeAndDangling(),
    ),
    envoy(
      'envoy-sidecar-transparent',
      'An Envoy sidecar with iptables interception (INTERCEPTION_MODE: REDIRECT) on the VM hosting a web and an echo endpoint.',
      envoyNode(`sidecar~${VM_IP}~web-1~default.svc`, { INTERCEPTION_MODE: 'REDIRECT' }),
    ),
    envoy(
      'envoy-sidecar-explicit',
      'An Envoy sidecar without iptables: explicit upstream listeners (PORTOLAN_UPSTREAMS) and an app port map.',
      envoyNode('web-1', {
        INSTANCE_IPS: VM_IP,
        PORTOLAN_UPSTREAMS: `${ECHO}:7070=17070,db.mesh.internal:5432=15432,web.mesh.internal:8080=127.0.0.2:18080`,
        PORTOLAN_APP_PORTS: '8080=18081',
      }),
    ),
    envoy(
      'envoy-sidecar-http-proxy',
      'An Envoy sidecar in HTTP proxy mode (PORTOLAN_OUTBOUND: http-proxy): the app uses http_proxy=127.0.0.1:15080.',
      envoyNode('web-2', { INSTANCE_IPS: '10.0.0.9', PORTOLAN_OUTBOUND: 'http-proxy' }),
    ),
    envoy(
      'envoy-sidecar-scoped',
      'An Envoy sidecar in the namespace whose Sidecar resource limits what it is sent (REGISTRY_ONLY).',
      envoyNode('sidecar~10.0.0.7~scoped-1~scoped.svc', {
        NAMESPACE: SCOPED_NAMESPACE,
        PORTOLAN_OUTBOUND: 'transparent,explicit,http-proxy',
        PORTOLAN_UPSTREAMS: `${ECHO}:7070=17070`,
      }),
    ),
    envoy(
      'envoy-sidecar-mtls',
      'The transparent sidecar with workload mTLS on: PeerAuthentication STRICT (PERMISSIVE on 8080), ISTIO_MUTUAL to echo, certificates in PORTOLAN_CERT_DIR.',
      envoyNode(`sidecar~${VM_IP}~web-1~default.svc`, {
        INTERCEPTION_MODE: 'REDIRECT',
        LABELS: { app: 'web' },
        PORTOLAN_CERT_DIR: CERT_DIR,
      }),
      fixtureMeshWithMtls(),
    ),
    {
      name: 'grpc-client',
      about:
        'A proxyless gRPC client (no traffic rules): every target as HOST:PORT, and one.test by its bare hostname.',
      node: grpcNode('client-1'),
      catalog: grpcFixtureCatalog(),
      config: meshConfig(),
      named: { [LISTENER]: [ONE] },
      wildcard: true,
    },
    {
      name: 'grpc-client-traffic',
      about:
        'A proxyless gRPC client on the Envoy fixture mesh: its VirtualServices and DestinationRules as gRPC renders them.',
      node: grpcNode('client-2'),
      catalog: fixtureCatalog(),
      config: meshConfig(fixtureMeshConfig()),
      named: {},
      wildcard: true,
    },
    {
      name: 'grpc-client-merged-rules',
      about:
        'A proxyless gRPC client on the fixture mesh with two DestinationRules for reviews (merged as Istio merges them) and reviews routes to an undefined subset and an unknown host (BlackHoleCluster, an EDS cluster without endpoints).',
      node: grpcNode('client-merged'),
      catalog: fixtureCatalog(),
      config: fixtureMeshWithMergeAndDangling(),
      named: {},
      wildcard: true,
    },
    {
      name: 'grpc-client-ccore-1.51',
      about:
        'gRPC C-core 1.51 (Debian bookworm’s python3-grpcio) on the same mesh as grpc-client-traffic: ROUND_ROBIN where the others get RING_HASH, which crashes it (grpc/grpc#31766; xds/proxy/client-capabilities.ts).',
      node: {
        ...grpcNode('client-ccore'),
        user_agent_name: 'gRPC C-core linux Python',
        user_agent_version: 'C-core 29.0.0 Python 1.51.1',
      },
      catalog: fixtureCatalog(),
      config: meshConfig(fixtureMeshConfig()),
      named: {},
      wildcard: true,
    },
    {
      name: 'grpc-client-mtls',
      about:
        'A proxyless gRPC client with DestinationRule ISTIO_MUTUAL to one.test: gRFC A29 certificate providers and SPIFFE SANs.',
      node: grpcNode('client-3'),
      catalog: grpcFixtureCatalog(),
      config: meshConfig({ destinationRules: [istioMutual(oneSubsets)] }),
      trustDomain: 'example.org',
      named: {},
      wildcard: true,
    },
    {
      name: 'envoy-sidecar-locality',
      about:
        'An Envoy sidecar in us-east/us-east-1a/rack-1 (node.locality) on network east-net (NETWORK): failover, failoverPriority and distribute rendered as its own EDS priorities and locality weights.',
      node: {
        ...envoyNode('sidecar~10.9.0.1~web-1~default.svc', {
          INTERCEPTION_MODE: 'REDIRECT',
          NETWORK: NODE_NETWORK,
        }),
        locality: NODE_LOCALITY,
      },
      catalog: localityCatalog(),
      config: meshConfig({ destinationRules: localityDestinationRules() }),
      named: {},
      wildcard: true,
    },
    {
      name: 'grpc-client-locality',
      about:
        'A proxyless gRPC client in us-east/us-east-1a/rack-1 on network east-net: the same EDS priorities and locality weights as the Envoy sidecar there (gRFC A27).',
      node: { ...grpcNode('client-locality', { NETWORK: NODE_NETWORK }), locality: NODE_LOCALITY },
      catalog: localityCatalog(),
      config: meshConfig({ destinationRules: localityDestinationRules() }),
      named: {},
      wildcard: true,
    },
    {
      name: 'grpc-server',
      about:
        'A proxyless gRPC server (gRFC A36 XdsServer) on 10.0.0.1:7070 with no PeerAuthentication: plaintext.',
      node: grpcNode('one-server-1', { LABELS: { app: 'one' } }),
      catalog: grpcFixtureCatalog(),
      config: meshConfig(),
      named: { [LISTENER]: [serverListener('10.0.0.1:7070')] },
      wildcard: false,
    },
    {
      name: 'grpc-server-mtls',
      about:
        'The proxyless gRPC server under PeerAuthentication STRICT: its listener requires a client certificate.',
      node: grpcNode('one-server-1', { LABELS: { app: 'one' } }),
      catalog: grpcFixtureCatalog(),
      config: meshConfig({
        peerAuthentications: [
          peerAuthentication('default', 'one', {
            selector: { matchLabels: { app: 'one' } },
            mtls: { mode: 'STRICT' },
          }),
        ],
      }),
      trustDomain: 'example.org',
      named: { [LISTENER]: [serverListener('10.0.0.1:7070'), serverListener('[::]:8080')] },
      wildcard: false,
    },
    ...authorizationCases(),
  ];
}

/**
 * Every policy of examples/authorization/ (the cookbook, docs/authorization.md) on the workload it
 * selects, in namespace shop under STRICT mTLS: the RBAC and jwt_authn filters each one renders.
 */
function authorizationCases(): GoldenCase[] {
  const config = (): MeshConfig => authzFixtureConfig(++generation);
  const envoy = (name: string, about: string, node: NodeInfo): GoldenCase => ({
    name,
    about,
    node,
    catalog: authzFixtureCatalog(),
    config: config(),
    named: {},
    wildcard: true,
  });
  const sidecar = (ip: string, app: string) =>
    envoyNode(`sidecar~${ip}~${app}-1~shop.svc`, {
      NAMESPACE: 'shop',
      LABELS: { app },
      INTERCEPTION_MODE: 'REDIRECT',
      PORTOLAN_CERT_DIR: CERT_DIR,
    });
  return [
    envoy(
      'envoy-authz-payments',
      'An Envoy sidecar for payments (gRPC) under examples/authorization/: deny-all, allow-principal, per-method (ALLOW), deny-method (DENY) and audit (shadow rules).',
      sidecar(PAYMENTS_IP, 'payments'),
    ),
    envoy(
      'envoy-authz-ledger',
      'An Envoy sidecar for ledger (gRPC and a TCP port) under examples/authorization/: deny-all and allow-namespace as HTTP and as network RBAC.',
      sidecar(LEDGER_IP, 'ledger'),
    ),
    envoy(
      'envoy-authz-catalog',
      'An Envoy sidecar for catalog (HTTP) under examples/authorization/: allow-all (one empty rule) next to deny-all.',
      sidecar(CATALOG_IP, 'catalog'),
    ),
    envoy(
      'envoy-authz-gateway',
      'The ingress gateway under examples/authorization/jwt-gateway.yaml: jwt_authn ahead of RBAC, and the JWKS cluster.',
      envoyNode('router~10.1.9.9~ingress-1~istio-system.svc', {
        NAMESPACE: 'istio-system',
        LABELS: AUTHZ_INGRESS_LABELS,
      }),
    ),
    {
      name: 'grpc-server-authz',
      about:
        'A proxyless gRPC server for payments (gRFC A36 + A41) under examples/authorization/: RBAC HTTP filters on its server listener, never optional.',
      node: grpcNode('payments-server-1', { NAMESPACE: 'shop', LABELS: { app: 'payments' } }),
      catalog: authzFixtureCatalog(),
      config: config(),
      named: { [LISTENER]: [serverListener(`${PAYMENTS_IP}:7070`)] },
      wildcard: false,
    },
  ];
}
