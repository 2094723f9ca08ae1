// `portolan bootstrap`: every variant is a Bootstrap Envoy's own rules accept, its metadata is what
// the server parses back into the same settings, and bad flags are refused before anything is printed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { buildBootstrap, compileBootstrapOptions, validateBootstrap } from '../../../cli/bootstrap.js';
import { OptionError } from '../../../cli/options.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import { at } from './at.js';

const BASE = {
  namespace: 'default',
  xdsAddr: '127.0.0.1:15010',
  adminAddr: '127.0.0.1:15000',
  format: 'json',
  upstream: [] as string[],
  appPort: [] as string[],
  label: [] as string[],
  maxConnections: '50000',
  kind: 'envoy',
};

const VARIANTS = {
  plain: { ...BASE, nodeId: 'vm-1' },
  transparent: { ...BASE, nodeId: 'sidecar~10.0.0.1~web-1~default.svc', interceptionMode: 'REDIRECT' },
  explicit: {
    ...BASE,
    nodeId: 'web-1',
    upstream: ['echo.mesh.internal:7070=17070', 'db.mesh.internal:5432=127.0.0.2:15432'],
    appPort: ['8080=18080'],
    instanceIps: '10.0.0.1',
  },
  httpProxy: {
    ...BASE,
    nodeId: 'web-2',
    outbound: 'http-proxy',
    httpProxyPort: '15081',
    outboundPolicy: 'REGISTRY_ONLY',
  },
  gateway: { ...BASE, nodeId: 'router~10.0.1.1~ingress~default.svc', label: ['istio=ingressgateway'] },
  tlsByName: {
    ...BASE,
    nodeId: 'vm-3',
    xdsAddr: 'portolan.internal:15012',
    xdsCert: '/etc/portolan/cert-chain.pem',
    xdsKey: '/etc/portolan/key.pem',
    xdsCa: '/etc/portolan/root-cert.pem',
    locality: 'eu/eu-1a/rack-4',
    serviceAccount: 'web',
  },
};

for (const [name, raw] of Object.entries(VARIANTS)) {
  test(`the ${name} bootstrap passes Envoy's validation rules`, () => {
    const bootstrap = buildBootstrap(compileBootstrapOptions(raw));
    assert.deepEqual(validateBootstrap(bootstrap), []);
  });
}

test('the bootstrap points ADS at the xds cluster and subscribes LDS and CDS over ADS', () => {
  const b = buildBootstrap(compileBootstrapOptions(VARIANTS.tlsByName));
  assert.equal(at(b, 'dynamic_resources.ads_config.grpc_services[0].envoy_grpc.cluster_name'), 'xds_cluster');
  assert.deepEqual(at(b, 'dynamic_resources.lds_config'), { ads: {}, resource_api_version: 'V3' });
  assert.deepEqual(at(b, 'dynamic_resources.cds_config'), { ads: {}, resource_api_version: 'V3' });
  const xds = at(b, 'static_resources.clusters[0]');
  assert.equal(at(xds, 'type'), 'STRICT_DNS', 'a host name is resolved');
  assert.equal(
    at(xds, 'load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value'),
    15012,
  );
  assert.equal(
    at(xds, 'transport_socket.typed_config.common_tls_context.validation_context.trusted_ca.filename'),
    '/etc/portolan/root-cert.pem',
  );
  assert.equal(at(b, 'node.locality.sub_zone'), 'rack-4');
});

test('the metadata a bootstrap carries parses back into the same settings on the server', () => {
  const b = buildBootstrap(compileBootstrapOptions(VARIANTS.explicit)) as {
    node: { id: string; metadata: Record<string, unknown> };
  };
  const proxy = proxyFromNode({ id: b.node.id, user_agent_name: 'envoy', metadata: b.node.metadata });
  assert.deepEqual(proxy.envoy?.outboundModes, ['explicit']);
  assert.deepEqual(
    proxy.envoy?.upstreams.map((u) => `${u.hostname}:${u.port}@${u.bind}:${u.localPort}`),
    ['echo.mesh.internal:7070@127.0.0.1:17070', 'db.mesh.internal:5432@127.0.0.2:15432'],
  );
  assert.deepEqual(proxy.envoy?.appPorts, { 8080: 18080 });
  assert.deepEqual(proxy.ips, ['10.0.0.1']);
});

test('the validator catches a broken bootstrap (empty cluster name, zero connect timeout)', () => {
  const b = buildBootstrap(compileBootstrapOptions(VARIANTS.plain));
  const xds = at(b, 'static_resources.clusters[0]') as Record<string, unknown>;
  xds.name = '';
  xds.connect_timeout = '0s';
  const problems = validateBootstrap(b);
  assert.ok(
    problems.some((p) => p.startsWith('static_resources.clusters[0].name')),
    problems.join('\n'),
  );
  assert.ok(
    problems.some((p) => p.startsWith('static_resources.clusters[0].connect_timeout')),
    problems.join('\n'),
  );
});

test('bad flags are refused with an OptionError', () => {
  assert.throws(() => compileBootstrapOptions({ ...BASE, nodeId: '' }), OptionError);
  assert.throws(
    () => compileBootstrapOptions({ ...BASE, nodeId: 'vm', upstream: ['nope'] }),
    /PORTOLAN_UPSTREAMS/,
  );
  assert.throws(() => compileBootstrapOptions({ ...BASE, nodeId: 'vm', outbound: 'magic' }), OptionError);
  assert.throws(() => compileBootstrapOptions({ ...BASE, nodeId: 'vm', xdsCert: '/c' }), /go together/);
  assert.throws(() => compileBootstrapOptions({ ...BASE, nodeId: 'vm', format: 'xml' }), OptionError);
  assert.throws(() => compileBootstrapOptions({ ...BASE, nodeId: 'vm', label: ['novalue'] }), OptionError);
});

test('`portolan bootstrap --format yaml` prints a valid bootstrap; a bad flag exits 2', () => {
  const main = fileURLToPath(new URL('../../../cli/main.js', import.meta.url));
  const ok = spawnSync(
    process.execPath,
    [
      main,
      'bootstrap',
      '--node-id',
      'vm-9',
      '--upstream',
      'echo.mesh.internal:7070=17070',
      '--format',
      'yaml',
    ],
    { encoding: 'utf8', timeout: 20_000 },
  );
  assert.equal(ok.status, 0, ok.stderr);
  const b = parse(ok.stdout) as Record<string, unknown> & { node: { metadata: Record<string, unknown> } };
  assert.equal(b.node.metadata.PORTOLAN_UPSTREAMS, 'echo.mesh.internal:7070=17070');
  assert.deepEqual(validateBootstrap(b), []);
  const bad = spawnSync(process.execPath, [main, 'bootstrap', '--node-id', 'vm-9', '--outbound', 'magic'], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /PORTOLAN_OUTBOUND/);
});
