// The certificate files reach the proxies: `portolan bootstrap --cert-dir` gives Envoy file-based SDS
// for the xDS connection (secrets `default` and `ROOTCA` from the SDS files `portolan cert` writes)
// and gRPC the `file_watcher` provider; the SDS files are valid Envoy Secrets; @grpc/grpc-js-xds's
// own bootstrap parser accepts the gRPC bootstrap (and refuses `tls` channel_creds, as documented).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateBootstrapConfig } from '@grpc/grpc-js-xds/build/src/xds-bootstrap.js';
import { buildBootstrap, compileBootstrapOptions, validateBootstrap } from '../../../cli/bootstrap.js';
import { buildGrpcBootstrap } from '../../../cli/grpc-bootstrap.js';
import { OptionError } from '../../../cli/options.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { fromProtoJson } from '../../../xds/validate/proto-json.js';
import { validateObject } from '../../../xds/validate/pgv-validator.js';
import { sdsFiles } from '../../../mesh/workload-certs.js';
import { at } from '../envoy/at.js';

const RAW = {
  nodeId: 'orders-vm-1',
  namespace: 'shop',
  serviceAccount: 'orders',
  xdsAddr: 'cp.example:15012',
  adminAddr: '127.0.0.1:15000',
  format: 'json',
  upstream: [] as string[],
  appPort: [] as string[],
  label: [] as string[],
  maxConnections: '50000',
  kind: 'envoy',
  certDir: '/etc/portolan/certs',
  xdsTls: true,
};

test('--cert-dir --xds-tls: the xDS cluster reads secrets default and ROOTCA from the SDS files', () => {
  const b = buildBootstrap(compileBootstrapOptions(RAW));
  assert.deepEqual(validateBootstrap(b), []);
  const tls = at(b, 'static_resources.clusters[0].transport_socket.typed_config.common_tls_context');
  assert.deepEqual(at(tls, 'tls_certificate_sds_secret_configs[0]'), {
    name: 'default',
    sds_config: {
      path_config_source: {
        path: '/etc/portolan/certs/sds-default.yaml',
        watched_directory: { path: '/etc/portolan/certs' },
      },
      resource_api_version: 'V3',
    },
  });
  // The roots come from ROOTCA, and the server must also be the control plane (issue #17 item 10):
  // a workload's certificate from the same CA lacks this SAN.
  const validation = at(tls, 'combined_validation_context');
  assert.equal(at(validation, 'validation_context_sds_secret_config.name'), 'ROOTCA');
  assert.equal(
    at(validation, 'validation_context_sds_secret_config.sds_config.path_config_source.path'),
    '/etc/portolan/certs/sds-rootca.yaml',
  );
  assert.deepEqual(at(validation, 'default_validation_context.match_typed_subject_alt_names'), [
    {
      san_type: 'URI',
      matcher: { exact: 'spiffe://cluster.local/ns/portolan-system/sa/portolan-control-plane' },
    },
  ]);
  assert.equal(at(tls, 'tls_certificates'), undefined, 'no inline files, which Envoy reads only once');
  const node = at(b, 'node') as { id: string; metadata: Record<string, unknown> };
  assert.equal(node.metadata.PORTOLAN_CERT_DIR, '/etc/portolan/certs');
  const proxy = proxyFromNode({ id: node.id, user_agent_name: 'envoy', metadata: node.metadata });
  assert.equal(proxy.envoy?.certDir, '/etc/portolan/certs', 'the server reads the directory back');
});

test('the SDS files are Envoy Secrets naming the PEM files by absolute path', () => {
  const files = sdsFiles('/etc/portolan/certs');
  const secrets = Object.values(files).map((f) => {
    const [resource] = (f as { resources: Record<string, unknown>[] }).resources;
    assert.ok(resource);
    const { '@type': type, ...secret } = resource;
    assert.equal(type, 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret');
    const object = fromProtoJson('envoy.extensions.transport_sockets.tls.v3.Secret', secret);
    assert.deepEqual(validateObject('envoy.extensions.transport_sockets.tls.v3.Secret', object), []);
    return secret;
  });
  assert.deepEqual(
    secrets.map((s) => [
      s.name,
      at(s, 'tls_certificate.certificate_chain.filename') ?? at(s, 'validation_context.trusted_ca.filename'),
    ]),
    [
      ['default', '/etc/portolan/certs/cert-chain.pem'],
      ['ROOTCA', '/etc/portolan/certs/root-cert.pem'],
    ],
  );
  assert.equal(at(secrets[0], 'tls_certificate.private_key.filename'), '/etc/portolan/certs/key.pem');
});

test('--kind grpc: a bootstrap @grpc/grpc-js-xds accepts, with the file_watcher provider `default`', () => {
  const plain = buildGrpcBootstrap(
    compileBootstrapOptions({ ...RAW, kind: 'grpc', xdsTls: false, xdsAddr: '127.0.0.1:15010' }),
  );
  const info = validateBootstrapConfig(plain);
  assert.deepEqual(info.certificateProviders.default, {
    pluginName: 'file_watcher',
    config: {
      certificateFile: '/etc/portolan/certs/cert-chain.pem',
      privateKeyFile: '/etc/portolan/certs/key.pem',
      caCertificateFile: '/etc/portolan/certs/root-cert.pem',
      refreshIntervalMs: 60_000,
    },
  });
  assert.deepEqual(at(plain, 'node.metadata'), {
    NAMESPACE: 'shop',
    SERVICE_ACCOUNT: 'orders',
    PORTOLAN_CERT_DIR: '/etc/portolan/certs',
  });
  assert.equal(info.xdsServers[0]?.channel_creds[0]?.type, 'insecure');
  assert.equal(info.serverListenerResourceNameTemplate, 'grpc/server?xds.resource.listening_address=%s');

  // mTLS to the secure port: the `tls` creds other gRPC languages read; grpc-js-xds 1.14 refuses them.
  const secure = buildGrpcBootstrap(compileBootstrapOptions({ ...RAW, kind: 'grpc' }));
  assert.deepEqual(at(secure, 'xds_servers[0].channel_creds[0]'), {
    type: 'tls',
    config: {
      ca_certificate_file: '/etc/portolan/certs/root-cert.pem',
      certificate_file: '/etc/portolan/certs/cert-chain.pem',
      private_key_file: '/etc/portolan/certs/key.pem',
    },
  });
  assert.throws(() => validateBootstrapConfig(secure), /channel_creds/);
});

test('--xds-tls needs --cert-dir and excludes the explicit file flags; --kind is envoy or grpc', () => {
  assert.throws(() => compileBootstrapOptions({ ...RAW, certDir: undefined }), /give --cert-dir/);
  assert.throws(
    () => compileBootstrapOptions({ ...RAW, xdsCert: '/c', xdsKey: '/k', xdsCa: '/r' }),
    /alternatives/,
  );
  assert.throws(() => compileBootstrapOptions({ ...RAW, kind: 'istio' }), OptionError);
});
