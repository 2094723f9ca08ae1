// `portolan agent`'s flags and bootstraps (cli/agent.ts): the identity is checked against the token
// before anything starts; the Envoy bootstrap points ADS at the agent's xDS socket and SDS at its SDS
// socket (validated against Envoy's rules, its node read back by the server as "secrets from
// sds-grpc"), and the TLS contexts such a node is sent fetch their secrets from that cluster; the gRPC
// bootstrap, which @grpc/grpc-js-xds itself accepts, points at the plaintext local port.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { validateBootstrapConfig } from '@grpc/grpc-js-xds/build/src/xds-bootstrap.js';
import { compileAgentSettings, renderBootstrap } from '../../../cli/agent.js';
import { validateBootstrap } from '../../../cli/bootstrap.js';
import { OptionError } from '../../../cli/options.js';
import { sdsSecretConfig } from '../../../xds/generators/sds-config.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { at } from '../envoy/at.js';

let dir: string;
let flags: Parameters<typeof compileAgentSettings>[0];

const tokenFor = (uri: string): string => `abc.secret.${Buffer.from(uri).toString('base64url')}`;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-agent-cli-'));
  writeFileSync(join(dir, 'root.pem'), 'roots');
  flags = {
    caAddr: 'cp.example:15012',
    rootCert: join(dir, 'root.pem'),
    namespace: 'shop',
    serviceAccount: 'cart',
    certDir: join(dir, 'certs'),
    dataDir: join(dir, 'data'),
    runDir: join(dir, 'run'),
    listenXds: '127.0.0.1:15020',
    statusAddr: '127.0.0.1:15021',
    adminAddr: '127.0.0.1:15000',
    maxLocalStreams: '1024',
    cacheMaxNodes: '64',
    cacheMaxBytes: '64MiB',
    cacheFallback: '3s',
    drainTimeout: '20s',
    logLevel: 'info',
  };
});

after(() => rmSync(dir, { recursive: true, force: true }));

test('defaults: xDS to the CA address, sockets in the run directory, node id SA.HOSTNAME', () => {
  const s = compileAgentSettings(flags, undefined);
  assert.equal(s.spiffeId, 'spiffe://cluster.local/ns/shop/sa/cart');
  assert.equal(s.xdsAddr, 'cp.example:15012');
  assert.equal(s.xdsSocket, join(dir, 'run', 'xds.sock'));
  assert.equal(s.sdsSocket, join(dir, 'run', 'sds.sock'));
  assert.equal(s.nodeId, `cart.${hostname()}`);
  assert.equal(s.cacheMaxBytes, 64 * 1024 * 1024);
  assert.equal(s.fallbackMs, 3000);
  assert.equal(s.drainMs, 20_000);
  const off = compileAgentSettings({ ...flags, xdsSocket: 'off', sdsSocket: 'off' }, undefined);
  assert.equal(off.xdsSocket, undefined);
  assert.equal(off.sdsSocket, undefined);
});

test('the token must be for the identity the flags name; its trust domain is the default', () => {
  const td = compileAgentSettings(flags, tokenFor('spiffe://example.org/ns/shop/sa/cart'));
  assert.equal(td.spiffeId, 'spiffe://example.org/ns/shop/sa/cart', 'from PORTOLAN_JOIN_TOKEN');
  assert.throws(
    () =>
      compileAgentSettings(
        { ...flags, token: tokenFor('spiffe://cluster.local/ns/shop/sa/payments') },
        undefined,
      ),
    (err) =>
      err instanceof OptionError &&
      err.message ===
        'the join token is for spiffe://cluster.local/ns/shop/sa/payments, but --namespace/--service-account/--trust-domain make spiffe://cluster.local/ns/shop/sa/cart',
  );
  assert.throws(
    () => compileAgentSettings({ ...flags, token: 'garbage' }, undefined),
    /--token: malformed join token/,
  );
  assert.throws(
    () =>
      compileAgentSettings(
        { ...flags, namespace: 'portolan-system', serviceAccount: 'portolan-control-plane' },
        undefined,
      ),
    /control plane's own identity/,
  );
  assert.throws(
    () => compileAgentSettings({ ...flags, rootCert: join(dir, 'nope.pem') }, undefined),
    /--root-cert: ENOENT/,
  );
  assert.throws(
    () => compileAgentSettings({ ...flags, cacheMaxBytes: '64MB' }, undefined),
    /--cache-max-bytes: expected a size/,
  );
  assert.throws(
    () => compileAgentSettings({ ...flags, listenXds: '15020' }, undefined),
    /--listen-xds: expected HOST:PORT/,
  );
});

test('the Envoy bootstrap: ADS on the xDS socket, SDS on the SDS socket, valid for Envoy', () => {
  const s = compileAgentSettings({ ...flags, nodeId: 'cart-vm-1' }, undefined);
  const bootstrap = JSON.parse(renderBootstrap('envoy', s)) as Record<string, unknown>;
  assert.deepEqual(validateBootstrap(bootstrap), []);
  const [xds, sds] = at(bootstrap, 'static_resources.clusters') as Record<string, unknown>[];
  assert.equal(at(xds, 'name'), 'xds_cluster');
  assert.deepEqual(at(xds, 'load_assignment.endpoints[0].lb_endpoints[0].endpoint.address'), {
    pipe: { path: join(dir, 'run', 'xds.sock') },
  });
  assert.equal(at(xds, 'transport_socket'), undefined, 'plaintext to the agent: it holds the TLS');
  assert.equal(at(sds, 'name'), 'sds-grpc');
  assert.deepEqual(at(sds, 'load_assignment.endpoints[0].lb_endpoints[0].endpoint.address'), {
    pipe: { path: join(dir, 'run', 'sds.sock') },
  });
  const node = at(bootstrap, 'node') as { id: string; metadata: Record<string, unknown> };
  assert.equal(node.id, 'cart-vm-1');
  assert.deepEqual(node.metadata, {
    NAMESPACE: 'shop',
    SERVICE_ACCOUNT: 'cart',
    PORTOLAN_CERT_DIR: join(dir, 'certs'),
    PORTOLAN_SDS_CLUSTER: 'sds-grpc',
  });
  // The server reads the node back, and the TLS contexts it sends name the SDS cluster.
  const proxy = proxyFromNode({ id: node.id, user_agent_name: 'envoy', metadata: node.metadata });
  assert.equal(proxy.envoy?.sdsCluster, 'sds-grpc');
  assert.deepEqual(sdsSecretConfig(proxy.envoy ?? { certDir: '', sdsCluster: '' }, 'default'), {
    name: 'default',
    sds_config: {
      api_config_source: {
        api_type: 'GRPC',
        transport_api_version: 'V3',
        grpc_services: [{ envoy_grpc: { cluster_name: 'sds-grpc' } }],
        set_node_on_first_message_only: true,
      },
      initial_fetch_timeout: { seconds: 0 },
      resource_api_version: 'V3',
    },
  });
  // Without the xDS socket, Envoy uses the plaintext port.
  const tcp = JSON.parse(
    renderBootstrap('envoy', compileAgentSettings({ ...flags, xdsSocket: 'off' }, undefined)),
  ) as Record<string, unknown>;
  assert.deepEqual(
    at(tcp, 'static_resources.clusters[0].load_assignment.endpoints[0].lb_endpoints[0].endpoint.address'),
    {
      socket_address: { address: '127.0.0.1', port_value: 15020 },
    },
  );
});

test('the gRPC bootstrap: the plaintext local port, the certificate files, accepted by grpc-js-xds', () => {
  const s = compileAgentSettings({ ...flags, nodeId: 'cart-app-1' }, undefined);
  const bootstrap = JSON.parse(renderBootstrap('grpc', s)) as Record<string, unknown>;
  const info = validateBootstrapConfig(bootstrap);
  assert.equal(info.xdsServers[0]?.server_uri, '127.0.0.1:15020');
  assert.equal(info.xdsServers[0]?.channel_creds[0]?.type, 'insecure');
  assert.equal(info.node.id, 'cart-app-1');
  assert.deepEqual(info.certificateProviders.default?.config, {
    certificateFile: join(dir, 'certs', 'cert-chain.pem'),
    privateKeyFile: join(dir, 'certs', 'key.pem'),
    caCertificateFile: join(dir, 'certs', 'root-cert.pem'),
    refreshIntervalMs: 60_000,
  });
});
