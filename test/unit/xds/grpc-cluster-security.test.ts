// gRFC A29 on proxyless gRPC clusters: ISTIO_MUTUAL names the bootstrap's certificate provider for the
// identity and the roots, with a SAN matcher for exactly the endpoints' SPIFFE identities. Checked
// with Envoy's (validate.rules) and with @grpc/grpc-js-xds's own CDS decoder, which is what a Node
// client applies; SIMPLE and MUTUAL (files, which A29 cannot name) leave the cluster unserved.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClusterResourceType } from '@grpc/grpc-js-xds/build/src/xds-resource-type/cluster-resource-type.js';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type { ClientTLSSettings } from '../../../mesh/types.js';
import { buildCatalog } from '../../../model/catalog.js';
import type { GenerateContext } from '../../../xds/generators/generator.js';
import { grpcClusterGenerator } from '../../../xds/generators/grpc/cluster.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { CLUSTER } from '../../../xds/proto/type-urls.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { endpoint, service, servicePort } from '../../support/model-fixtures.js';
import { at } from '../envoy/at.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

const PAYMENTS = 'payments.shop.internal';
const NAME = `outbound|7070||${PAYMENTS}`;
const catalog = buildCatalog(
  [service(PAYMENTS, [servicePort('grpc', 7070, 'GRPC')], { namespace: 'shop' })],
  new Map([
    [
      PAYMENTS,
      [
        endpoint('10.1.0.2', { grpc: 7070 }, { serviceAccount: 'payments' }),
        endpoint('10.1.0.3', { grpc: 7070 }, { serviceAccount: 'payments.v2' }),
      ],
    ],
  ]),
);
const proxy = proxyFromNode({
  id: 'orders-1',
  user_agent_name: 'gRPC Node Pure JS',
  metadata: { NAMESPACE: 'shop' },
});

function meshWith(tls: ClientTLSSettings | undefined, generation: number): MeshConfig {
  return {
    generation,
    virtualServices: [],
    gateways: [],
    sidecars: [],
    peerAuthentications: [],
    authorizationPolicies: [],
    requestAuthentications: [],
    destinationRules: tls
      ? [
          {
            kind: 'DestinationRule',
            apiVersion: 'networking.istio.io/v1',
            name: 'payments',
            namespace: 'shop',
            labels: {},
            annotations: {},
            spec: { host: PAYMENTS, trafficPolicy: { tls } },
            file: 'dr.yaml',
            line: 1,
          },
        ]
      : [],
  };
}

function build(tls: ClientTLSSettings | undefined) {
  const ctx: GenerateContext = generateContext({
    proxy,
    catalog,
    config: meshWith(tls, 1),
    trustDomain: 'example.org',
  });
  return grpcClusterGenerator.build(ctx, NAME);
}

/** What grpc-js-xds makes of the resource, with a bootstrap that has the `default` provider. */
function grpcJsDecode(value: Buffer) {
  const context = {
    bootstrap: { certificateProviders: { default: { pluginName: 'file_watcher', config: {} } } },
    server: undefined,
  } as unknown as Parameters<ClusterResourceType['decode']>[0];
  return ClusterResourceType.get().decode(context, { type_url: CLUSTER, value });
}

test("ISTIO_MUTUAL: provider `default` for identity and roots, SANs exactly the endpoints' identities", () => {
  const r = build({ mode: 'ISTIO_MUTUAL' });
  assert.ok(r);
  assert.deepEqual(validateEncoded('envoy.config.cluster.v3.Cluster', r.value), []);
  const tls = at(decodeAny(r.typeUrl, r.value), 'transport_socket.typed_config.common_tls_context');
  assert.equal(at(tls, 'tls_certificate_provider_instance.instance_name'), 'default');
  assert.equal(at(tls, 'validation_context.ca_certificate_provider_instance.instance_name'), 'default');

  const decoded = grpcJsDecode(r.value);
  assert.equal(decoded.error, undefined, decoded.error);
  const security = (decoded.value as { securityUpdate?: Record<string, unknown> }).securityUpdate;
  assert.equal(security?.caCertificateProviderInstance, 'default');
  assert.equal(security?.identityCertificateProviderInstance, 'default');
  const [matcher] = security?.subjectAltNameMatchers as { safe_regex?: { regex: string } }[];
  const re = new RegExp(matcher?.safe_regex?.regex ?? '(?!)');
  assert.ok(re.test('spiffe://example.org/ns/shop/sa/payments'));
  assert.ok(re.test('spiffe://example.org/ns/shop/sa/payments.v2'));
  assert.ok(!re.test('spiffe://example.org/ns/shop/sa/paymentsXv2'), 'dots are literal');
  assert.ok(!re.test('spiffe://example.org/ns/shop/sa/payments-admin'));
  assert.ok(!re.test('spiffe://other.org/ns/shop/sa/payments'));
});

test('no rule or DISABLE: plaintext cluster; SIMPLE or MUTUAL: not served rather than served in plaintext', () => {
  for (const tls of [undefined, { mode: 'DISABLE' } as const]) {
    const r = build(tls);
    assert.ok(r);
    assert.equal(at(decodeAny(r.typeUrl, r.value), 'transport_socket'), undefined);
  }
  assert.equal(build({ mode: 'SIMPLE', caCertificates: '/etc/ca.pem' }), undefined);
  assert.equal(build({ mode: 'MUTUAL', clientCertificate: '/c', privateKey: '/k' }), undefined);
});
