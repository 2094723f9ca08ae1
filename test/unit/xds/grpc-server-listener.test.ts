// gRFC A36 server listeners: the name an XdsServer asks for (percent-encoded IP:PORT) gets a listener
// on that address that accepts every RPC, with a DownstreamTlsContext naming the `default`
// certificate provider when the server's PeerAuthentication is STRICT for the port, and plaintext
// otherwise (PERMISSIVE included: gRPC cannot tell TLS from plaintext on one port). Checked with
// Envoy's (validate.rules) and @grpc/grpc-js-xds's own LDS decoder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { register } from '@grpc/grpc-js-xds';
import { ListenerResourceType } from '@grpc/grpc-js-xds/build/src/xds-resource-type/listener-resource-type.js';
import { formatTemplateString } from '@grpc/grpc-js-xds/build/src/xds-bootstrap.js';
import type { MeshConfig } from '../../../mesh/mesh-config.js';
import type { MtlsMode } from '../../../mesh/types.js';
import { buildCatalog } from '../../../model/catalog.js';
import type { GenerateContext } from '../../../xds/generators/generator.js';
import { grpcListenerGenerator } from '../../../xds/generators/grpc/listener.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../../../xds/generators/grpc/server-listener.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { LISTENER } from '../../../xds/proto/type-urls.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { at } from '../envoy/at.js';
import { generateContext } from '../../../xds/generators/serving-view.js';

const proxy = proxyFromNode({
  id: 'ledger-1',
  user_agent_name: 'gRPC Node Pure JS',
  metadata: { NAMESPACE: 'shop', LABELS: { app: 'ledger' } },
});
// What grpc-js asks for when bound to 127.0.0.1:50051 (its own formatting of the template).
const NAME = formatTemplateString(GRPC_SERVER_LISTENER_TEMPLATE, '127.0.0.1:50051');
let generation = 0;
register(); // grpc-js-xds registers its HTTP filters (the router) here

function build(mode: MtlsMode | undefined, name = NAME) {
  generation += 1;
  const config: MeshConfig = {
    generation,
    virtualServices: [],
    gateways: [],
    sidecars: [],
    destinationRules: [],
    peerAuthentications: mode
      ? [
          {
            kind: 'PeerAuthentication',
            apiVersion: 'security.istio.io/v1',
            name: 'ledger',
            namespace: 'shop',
            labels: {},
            annotations: {},
            spec: { selector: { matchLabels: { app: 'ledger' } }, mtls: { mode } },
            file: 'pa.yaml',
            line: 1,
          },
        ]
      : [],
    authorizationPolicies: [],
    requestAuthentications: [],
  };
  const ctx: GenerateContext = generateContext({ proxy, catalog: buildCatalog([], new Map()), config });
  return grpcListenerGenerator.build(ctx, name);
}

function grpcJsDecode(value: Buffer) {
  const context = {
    bootstrap: { certificateProviders: { default: { pluginName: 'file_watcher', config: {} } } },
  } as unknown as Parameters<ListenerResourceType['decode']>[0];
  return ListenerResourceType.get().decode(context, { type_url: LISTENER, value });
}

test('STRICT: the listener on the bound address requires a client certificate via provider `default`', () => {
  const r = build('STRICT');
  assert.ok(r);
  assert.deepEqual(validateEncoded('envoy.config.listener.v3.Listener', r.value), []);
  assert.equal(grpcJsDecode(r.value).error, undefined);
  const l = decodeAny(r.typeUrl, r.value);
  assert.deepEqual(at(l, 'address.socket_address'), { address: '127.0.0.1', port_value: 50051 });
  const tls = at(l, 'filter_chains[0].transport_socket.typed_config');
  assert.equal(at(tls, 'require_client_certificate.value'), true);
  assert.equal(at(tls, 'common_tls_context.tls_certificate_provider_instance.instance_name'), 'default');
  assert.equal(
    at(tls, 'common_tls_context.validation_context.ca_certificate_provider_instance.instance_name'),
    'default',
  );
  const route = at(l, 'filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes[0]');
  assert.deepEqual(at(route, 'non_forwarding_action'), {});
});

test('PERMISSIVE, DISABLE or no policy: plaintext; a name that is not IP:PORT: no listener', () => {
  for (const mode of ['PERMISSIVE', 'DISABLE', undefined] as const) {
    const r = build(mode);
    assert.ok(r);
    assert.equal(grpcJsDecode(r.value).error, undefined);
    assert.equal(
      at(decodeAny(r.typeUrl, r.value), 'filter_chains[0].transport_socket'),
      undefined,
      String(mode),
    );
  }
  assert.equal(
    build('STRICT', formatTemplateString(GRPC_SERVER_LISTENER_TEMPLATE, 'ledger:50051')),
    undefined,
  );
  assert.equal(
    build('STRICT', formatTemplateString(GRPC_SERVER_LISTENER_TEMPLATE, '127.0.0.1:0')),
    undefined,
  );
});
