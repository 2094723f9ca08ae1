// Workload mTLS in the Envoy config: PeerAuthentication decides the inbound chains (STRICT requires a
// client certificate whose SPIFFE URI is in our trust domain; PERMISSIVE adds a plaintext chain told
// apart by tls_inspector; DISABLE and no policy stay plaintext), with Istio's precedence; a
// DestinationRule's tls mode puts an UpstreamTlsContext on the cluster. Every resource still passes
// the (validate.rules) validator and the consistency check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type {
  DestinationRuleResource,
  DestinationRuleSpec,
  PeerAuthenticationResource,
  PeerAuthenticationSpec,
} from '../../../mesh/types.js';
import { buildCatalog } from '../../../model/catalog.js';
import type { GenerateContext, ResourceGenerator } from '../../../xds/generators/generator.js';
import { envoyGenerators } from '../../../xds/generators/envoy/generators.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import type { Proxy } from '../../../xds/proxy/proxy.js';
import { CLUSTER, LISTENER, TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { checkConsistency } from '../../../xds/validate/consistency.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { at, list } from './at.js';
import { collect, envoyProxy } from './fixture-mesh.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

type Obj = Record<string, unknown>;

const TD = 'example.org';
const CERTS = '/var/lib/portolan/certs';
const VM = '10.1.0.1';
const ORDERS = 'orders.shop.internal';
const PAYMENTS = 'payments.shop.internal';

const catalog = buildCatalog(
  [
    service(ORDERS, [servicePort('http', 8080, 'HTTP'), servicePort('grpc', 9090, 'GRPC')], {
      namespace: 'shop',
    }),
    service(PAYMENTS, [servicePort('grpc', 7070, 'GRPC')], { namespace: 'shop' }),
  ],
  new Map([
    [ORDERS, [endpoint(VM, { http: 8080, grpc: 9090 }, { serviceAccount: 'orders' })]],
    [
      PAYMENTS,
      [
        endpoint('10.1.0.2', { grpc: 7070 }, { serviceAccount: 'payments' }),
        endpoint('10.1.0.3', { grpc: 7070 }, { serviceAccount: 'payments-canary' }),
      ],
    ],
  ]),
);

function resource<K extends 'PeerAuthentication' | 'DestinationRule', T>(
  kind: K,
  namespace: string,
  name: string,
  spec: T,
) {
  return {
    kind,
    apiVersion: kind === 'PeerAuthentication' ? 'security.istio.io/v1' : 'networking.istio.io/v1',
    name,
    namespace,
    labels: {},
    annotations: {},
    spec,
    file: 'mtls.yaml',
    line: 1,
  };
}

const pa = (ns: string, name: string, spec: PeerAuthenticationSpec): PeerAuthenticationResource =>
  resource('PeerAuthentication', ns, name, spec);
const dr = (ns: string, name: string, spec: DestinationRuleSpec): DestinationRuleResource =>
  resource('DestinationRule', ns, name, spec);

let generation = 0;

function config(
  peerAuthentications: PeerAuthenticationResource[],
  destinationRules: DestinationRuleResource[] = [],
): MeshConfig {
  // A new generation per config, as the server gives each content change (listeners are memoised by it).
  generation += 1;
  return {
    generation,
    virtualServices: [],
    gateways: [],
    sidecars: [],
    destinationRules,
    peerAuthentications,
    authorizationPolicies: [],
    requestAuthentications: [],
  };
}

function sidecar(metadata: Record<string, unknown> = {}): Proxy {
  return envoyProxy('orders-vm', {
    NAMESPACE: 'shop',
    INSTANCE_IPS: VM,
    LABELS: { app: 'orders' },
    PORTOLAN_CERT_DIR: CERTS,
    ...metadata,
  });
}

function generate(proxy: Proxy, mesh: MeshConfig, typeUrl: string): Map<string, Obj> {
  const ctx: GenerateContext = generateContext({ proxy, catalog, config: mesh, trustDomain: TD });
  const g: ResourceGenerator | undefined = envoyGenerators().find((x) => x.typeUrl === typeUrl);
  assert.ok(g);
  const out = new Map<string, Obj>();
  for (const name of g.wildcardNames(ctx)) {
    const r = g.build(ctx, name);
    if (!r) continue;
    assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], name);
    out.set(name, decodeAny(r.typeUrl, r.value));
  }
  return out;
}

function inboundListener(proxy: Proxy, mesh: MeshConfig, port: number): Obj {
  const l = generate(proxy, mesh, LISTENER).get(`${VM}_${port}`);
  assert.ok(l, `inbound listener ${VM}_${port}`);
  return l;
}

const tlsOf = (chain: unknown): unknown => at(chain, 'transport_socket.typed_config');

function assertRequiresSpiffeClient(chain: unknown): void {
  const tls = tlsOf(chain);
  assert.equal(at(tls, 'require_client_certificate.value'), true);
  const common = at(tls, 'common_tls_context');
  assert.equal(at(common, 'tls_certificate_sds_secret_configs[0].name'), 'default');
  assert.equal(
    at(common, 'tls_certificate_sds_secret_configs[0].sds_config.path_config_source.path'),
    `${CERTS}/sds-default.yaml`,
  );
  assert.equal(at(common, 'combined_validation_context.validation_context_sds_secret_config.name'), 'ROOTCA');
  assert.equal(
    at(
      common,
      'combined_validation_context.validation_context_sds_secret_config.sds_config.path_config_source.path',
    ),
    `${CERTS}/sds-rootca.yaml`,
  );
  assert.deepEqual(
    at(common, 'combined_validation_context.default_validation_context.match_typed_subject_alt_names'),
    [{ san_type: 'URI', matcher: { prefix: `spiffe://${TD}/` } }],
  );
}

test('no PeerAuthentication: inbound chains stay plaintext (no certificates assumed on the VM)', () => {
  const l = inboundListener(sidecar(), config([]), 8080);
  assert.equal(list(l, 'filter_chains').length, 1);
  assert.equal(tlsOf(at(l, 'filter_chains[0]')), undefined);
  assert.equal(at(l, 'listener_filters'), undefined);
});

test('STRICT: the one inbound chain requires a client certificate with a SPIFFE URI of our trust domain', () => {
  const l = inboundListener(sidecar(), config([pa('shop', 'strict', { mtls: { mode: 'STRICT' } })]), 8080);
  const chains = list(l, 'filter_chains');
  assert.equal(chains.length, 1);
  assertRequiresSpiffeClient(chains[0]);
  assert.deepEqual(at(tlsOf(chains[0]), 'common_tls_context.alpn_protocols'), ['h2', 'http/1.1']);
  assert.equal(at(chains[0], 'filters[0].name'), 'envoy.filters.network.http_connection_manager');
});

test('PERMISSIVE: a TLS chain for transport "tls" and a plaintext chain for "raw_buffer", with tls_inspector', () => {
  const l = inboundListener(
    sidecar(),
    config([pa('istio-system', 'mesh', { mtls: { mode: 'PERMISSIVE' } })]),
    9090,
  );
  assert.deepEqual(
    list(l, 'listener_filters').map((f) => at(f, 'name')),
    ['envoy.filters.listener.tls_inspector'],
  );
  const [tls, plain] = list(l, 'filter_chains');
  assert.equal(at(tls, 'filter_chain_match.transport_protocol'), 'tls');
  assertRequiresSpiffeClient(tls);
  assert.equal(at(plain, 'filter_chain_match.transport_protocol'), 'raw_buffer');
  assert.equal(tlsOf(plain), undefined);
  assert.equal(at(tls, 'filters[0].typed_config.cluster'), at(plain, 'filters[0].typed_config.cluster'));
});

test('precedence: mesh STRICT < namespace PERMISSIVE < workload DISABLE < its port-level STRICT', () => {
  const mesh = config([
    pa('istio-system', 'mesh', { mtls: { mode: 'STRICT' } }),
    pa('shop', 'ns', { mtls: { mode: 'PERMISSIVE' } }),
    pa('shop', 'orders', {
      selector: { matchLabels: { app: 'orders' } },
      mtls: { mode: 'DISABLE' },
      portLevelMtls: { '9090': { mode: 'STRICT' } },
    }),
    pa('shop', 'other', { selector: { matchLabels: { app: 'payments' } }, mtls: { mode: 'STRICT' } }),
  ]);
  const http = inboundListener(sidecar(), mesh, 8080);
  assert.equal(list(http, 'filter_chains').length, 1);
  assert.equal(tlsOf(at(http, 'filter_chains[0]')), undefined, 'workload DISABLE on 8080');
  const grpc = inboundListener(sidecar(), mesh, 9090);
  assertRequiresSpiffeClient(at(grpc, 'filter_chains[0]'));
  assert.equal(list(grpc, 'filter_chains').length, 1, 'port-level STRICT on 9090');

  // A workload without the selected labels gets the namespace's PERMISSIVE; UNSET inherits it.
  const other = sidecar({ LABELS: { app: 'batch' } });
  assert.equal(list(inboundListener(other, mesh, 8080), 'filter_chains').length, 2);
  const unset = config([
    pa('istio-system', 'mesh', { mtls: { mode: 'STRICT' } }),
    pa('shop', 'ns', { mtls: { mode: 'UNSET' } }),
  ]);
  assert.equal(list(inboundListener(other, unset, 8080), 'filter_chains').length, 1);
  assertRequiresSpiffeClient(at(inboundListener(other, unset, 8080), 'filter_chains[0]'));
});

test('transparent capture: virtualInbound carries the TLS chains per destination port', () => {
  const proxy = sidecar({ INTERCEPTION_MODE: 'REDIRECT' });
  const l = generate(proxy, config([pa('shop', 'p', { mtls: { mode: 'PERMISSIVE' } })]), LISTENER).get(
    'virtualInbound',
  );
  assert.ok(l);
  assert.deepEqual(
    list(l, 'listener_filters').map((f) => at(f, 'name')),
    ['envoy.filters.listener.original_dst', 'envoy.filters.listener.tls_inspector'],
  );
  const chains = list(l, 'filter_chains');
  assert.deepEqual(
    chains.map((c) => [
      at(c, 'filter_chain_match.destination_port.value'),
      at(c, 'filter_chain_match.transport_protocol'),
    ]),
    [
      [8080, 'tls'],
      [8080, 'raw_buffer'],
      [9090, 'tls'],
      [9090, 'raw_buffer'],
    ],
  );
  assert.equal(new Set(chains.map((c) => at(c, 'name'))).size, 4, 'chain names are unique');
});

test("DestinationRule ISTIO_MUTUAL: the cluster presents secret default and checks the endpoints' SPIFFE identities", () => {
  const mesh = config(
    [],
    [dr('shop', 'payments', { host: PAYMENTS, trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } })],
  );
  const cluster = generate(sidecar(), mesh, CLUSTER).get(`outbound|7070||${PAYMENTS}`);
  assert.ok(cluster);
  const tls = at(cluster, 'transport_socket.typed_config');
  assert.equal(at(cluster, 'transport_socket.name'), 'envoy.transport_sockets.tls');
  assert.equal(at(tls, 'common_tls_context.tls_certificate_sds_secret_configs[0].name'), 'default');
  assert.equal(
    at(tls, 'common_tls_context.combined_validation_context.validation_context_sds_secret_config.name'),
    'ROOTCA',
  );
  assert.deepEqual(
    list(
      at(tls, 'common_tls_context.combined_validation_context.default_validation_context') as Obj,
      'match_typed_subject_alt_names',
    ).map((m) => [at(m, 'san_type'), at(m, 'matcher.exact')]),
    [
      ['URI', `spiffe://${TD}/ns/shop/sa/payments`],
      ['URI', `spiffe://${TD}/ns/shop/sa/payments-canary`],
    ],
  );
  // A service the rule does not cover stays plaintext.
  assert.equal(
    at(generate(sidecar(), mesh, CLUSTER).get(`outbound|8080||${ORDERS}`), 'transport_socket'),
    undefined,
  );
});

test("DestinationRule port-level DISABLE overrides ISTIO_MUTUAL; SIMPLE and MUTUAL use the rule's files", () => {
  const portLevel = config(
    [],
    [
      dr('shop', 'orders', {
        host: ORDERS,
        trafficPolicy: {
          tls: { mode: 'ISTIO_MUTUAL' },
          portLevelSettings: [{ port: { number: 8080 }, tls: { mode: 'DISABLE' } }],
        },
      }),
    ],
  );
  const clusters = generate(sidecar(), portLevel, CLUSTER);
  assert.equal(at(clusters.get(`outbound|8080||${ORDERS}`), 'transport_socket'), undefined);
  assert.ok(at(clusters.get(`outbound|9090||${ORDERS}`), 'transport_socket'));

  const mutual = config(
    [],
    [
      dr('shop', 'payments', {
        host: PAYMENTS,
        trafficPolicy: {
          tls: {
            mode: 'MUTUAL',
            clientCertificate: '/etc/pay/client.pem',
            privateKey: '/etc/pay/client.key',
            caCertificates: '/etc/pay/ca.pem',
            subjectAltNames: ['payments.example.com'],
            sni: 'payments.example.com',
          },
        },
      }),
    ],
  );
  const tls = at(
    generate(sidecar(), mutual, CLUSTER).get(`outbound|7070||${PAYMENTS}`),
    'transport_socket.typed_config',
  );
  assert.equal(at(tls, 'sni'), 'payments.example.com');
  assert.equal(
    at(tls, 'common_tls_context.tls_certificates[0].certificate_chain.filename'),
    '/etc/pay/client.pem',
  );
  assert.equal(at(tls, 'common_tls_context.tls_certificates[0].private_key.filename'), '/etc/pay/client.key');
  assert.equal(at(tls, 'common_tls_context.validation_context.trusted_ca.filename'), '/etc/pay/ca.pem');
  assert.deepEqual(at(tls, 'common_tls_context.validation_context.match_typed_subject_alt_names[0]'), {
    san_type: 'DNS',
    matcher: { exact: 'payments.example.com' },
  });
});

test('with STRICT, PERMISSIVE and ISTIO_MUTUAL together the config is consistent for every outbound mode', () => {
  const mesh = config(
    [
      pa('istio-system', 'mesh', { mtls: { mode: 'PERMISSIVE' } }),
      pa('shop', 'orders', { selector: { matchLabels: { app: 'orders' } }, mtls: { mode: 'STRICT' } }),
    ],
    [dr('shop', 'all', { host: '*.shop.internal', trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } })],
  );
  for (const metadata of [
    {},
    { INTERCEPTION_MODE: 'REDIRECT' },
    { PORTOLAN_OUTBOUND: 'transparent,explicit,http-proxy', PORTOLAN_UPSTREAMS: `${PAYMENTS}:7070=17070` },
  ]) {
    const collected = collect(sidecar(metadata), catalog, mesh);
    assert.deepEqual(checkConsistency(collected), []);
    for (const [typeUrl, resources] of collected)
      for (const r of resources)
        assert.deepEqual(validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), r.value), [], r.name);
  }
});

test('a subset with its own tls overrides the rule: subset cluster plaintext, the host cluster ISTIO_MUTUAL', () => {
  const mesh = config(
    [],
    [
      dr('shop', 'payments', {
        host: PAYMENTS,
        trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } },
        subsets: [
          { name: 'legacy', labels: { version: 'v1' }, trafficPolicy: { tls: { mode: 'DISABLE' } } },
          { name: 'canary', labels: { version: 'v2' } },
        ],
      }),
    ],
  );
  const ctx: GenerateContext = generateContext({ proxy: sidecar(), catalog, config: mesh, trustDomain: TD });
  const g = envoyGenerators().find((x) => x.typeUrl === CLUSTER);
  assert.ok(g);
  const cluster = (name: string): Obj => {
    const r = g.build(ctx, name);
    assert.ok(r, name);
    assert.deepEqual(validateEncoded('envoy.config.cluster.v3.Cluster', r.value), [], name);
    return decodeAny(r.typeUrl, r.value);
  };
  assert.equal(at(cluster(`outbound|7070|legacy|${PAYMENTS}`), 'transport_socket'), undefined);
  assert.equal(
    at(cluster(`outbound|7070|canary|${PAYMENTS}`), 'transport_socket.name'),
    'envoy.transport_sockets.tls',
    'a subset without tls inherits the rule',
  );
  assert.equal(
    at(cluster(`outbound|7070||${PAYMENTS}`), 'transport_socket.name'),
    'envoy.transport_sockets.tls',
  );
});
