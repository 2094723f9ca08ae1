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
import { ONE, grpcFixtureCatalog } from '../support/grpc-fixture-mesh.js';
import {
  ECHO,
  INGRESS_LABELS,
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
  ];
}
