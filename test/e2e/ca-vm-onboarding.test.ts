// End to end, the VM onboarding walkthrough with the real commands: `portolan serve` (child process),
// `portolan ca root`, `portolan token create`, `portolan cert --once` (twice: token, then renewal
// with the certificate), then ADS over the secure port with that certificate; and two onboarded VMs
// calling each other over ISTIO_MUTUAL with a `portolan bootstrap --kind grpc` bootstrap.
// @grpc/grpc-js-xds 1.14.1 accepts only `insecure` and `google_default` channel_creds for its xDS
// server, so the secure port is exercised with a raw TLS ADS client, and the library's own client
// reaches it through a loopback TLS relay holding the `portolan cert` files.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startPortolanProcess, type PortolanProcess } from '../support/portolan-process.js';
import { register as registerXds, XdsChannelCredentials } from '@grpc/grpc-js-xds';
import { validateBootstrap } from '../../cli/bootstrap.js';
import { firstAdsAnswer } from '../integration/ca-helpers.js';
import { callEcho, echoClientClass, startEchoBackend } from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startTlsRelay } from '../support/tls-relay.js';

registerXds();

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const run = promisify(execFile);

let dir: string;
let portolan: PortolanProcess;
let secureAddress: string;

async function portolanCli(args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, [MAIN, ...args], { timeout: 20_000 });
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-ca-e2e-'));
  writeFileSync(
    join(dir, 'cart.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: cart, namespace: shop }
spec:
  hosts: [cart.shop.internal]
  ports: [{ number: 7070, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.7 }]
`,
  );
  portolan = await startPortolanProcess([
    '--config-dir',
    dir,
    '--data-dir',
    join(dir, 'data'),
    '--log-level',
    'info',
  ]);
  const serving = portolan.logs.find((l) => l.msg === 'portolan serving');
  secureAddress = String(serving?.secureXdsAddress);
  assert.match(secureAddress, /^127\.0\.0\.1:\d+$/);
  // Every test's `portolan cert` trusts this root; written here so that no test relies on another.
  writeFileSync(
    join(dir, 'root-cert.pem'),
    (await portolanCli(['ca', 'root', '--data-dir', join(dir, 'data')])).stdout,
  );
});

after(async () => {
  await portolan?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('token → cert → renewal → secure ADS, with the CLI commands of the walkthrough', async () => {
  const data = join(dir, 'data');
  const vm = join(dir, 'vm');
  const root = (await portolanCli(['ca', 'root', '--data-dir', data])).stdout;
  assert.match(root, /^-----BEGIN CERTIFICATE-----/);
  writeFileSync(join(dir, 'root-cert.pem'), root);

  const created = await portolanCli([
    'token',
    'create',
    '--namespace',
    'shop',
    '--service-account',
    'cart',
    '--ttl',
    '10m',
    '--data-dir',
    data,
  ]);
  const token = created.stdout.trim();
  assert.equal(created.stdout.split('\n').filter(Boolean).length, 1, 'stdout is only the token');

  const certArgs = [
    'cert',
    '--ca-addr',
    secureAddress,
    '--root-cert',
    join(dir, 'root-cert.pem'),
    '--out',
    vm,
    '--once',
  ];
  await portolanCli([...certArgs, '--token', token]);
  const first = new X509Certificate(readFileSync(join(vm, 'cert-chain.pem')));
  assert.equal(first.subjectAltName, 'URI:spiffe://cluster.local/ns/shop/sa/cart');
  assert.equal(statSync(join(vm, 'key.pem')).mode & 0o777, 0o600);

  await portolanCli(certArgs); // no token: renews with the certificate in --out
  const second = new X509Certificate(readFileSync(join(vm, 'cert-chain.pem')));
  assert.notEqual(second.serialNumber, first.serialNumber);

  await assert.rejects(
    portolanCli([...certArgs.slice(0, -2), join(dir, 'vm2'), '--once', '--token', token]),
    /used up/,
  );

  const tls = {
    rootPem: readFileSync(join(vm, 'root-cert.pem'), 'utf8'),
    certChainPem: readFileSync(join(vm, 'cert-chain.pem'), 'utf8'),
    keyPem: readFileSync(join(vm, 'key.pem'), 'utf8'),
  };
  const answer = await firstAdsAnswer(secureAddress, tls, {
    id: 'cart-vm-1',
    metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: 'cart' },
  });
  assert.deepEqual(answer, {
    kind: 'response',
    typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
    resources: 1,
  });
  const refused = await firstAdsAnswer(secureAddress, tls, {
    id: 'cart-vm-1',
    metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: 'admin' },
  });
  assert.equal(refused.kind === 'status' && refused.code, grpc.status.PERMISSION_DENIED);
  assert.equal(
    refused.kind === 'status' && refused.details,
    'node cart-vm-1 claims NAMESPACE=shop SERVICE_ACCOUNT=admin but its certificate is spiffe://cluster.local/ns/shop/sa/cart',
  );

  // The Envoy bootstrap of the walkthrough: ADS over mTLS with these files through SDS.
  const envoy = JSON.parse(
    (
      await portolanCli([
        'bootstrap',
        '--node-id',
        'cart-vm-1',
        '--namespace',
        'shop',
        '--service-account',
        'cart',
        '--xds-addr',
        secureAddress,
        '--cert-dir',
        vm,
        '--xds-tls',
      ])
    ).stdout,
  ) as Record<string, unknown>;
  assert.deepEqual(validateBootstrap(envoy), []);
  const sds = JSON.parse(readFileSync(join(vm, 'sds-default.yaml'), 'utf8')) as {
    resources: { tls_certificate: { certificate_chain: { filename: string } } }[];
  };
  assert.equal(
    readFileSync(sds.resources[0]?.tls_certificate.certificate_chain.filename ?? '', 'utf8'),
    tls.certChainPem,
  );
});

test('a revoked token is refused by the running server at once', async () => {
  const data = join(dir, 'data');
  const token = (
    await portolanCli([
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      'cart',
      '--uses',
      '3',
      '--data-dir',
      data,
    ])
  ).stdout.trim();
  await portolanCli(['token', 'revoke', token, '--data-dir', data]);
  await assert.rejects(
    portolanCli([
      'cert',
      '--ca-addr',
      secureAddress,
      '--root-cert',
      join(dir, 'root-cert.pem'),
      '--out',
      join(dir, 'vm3'),
      '--once',
      '--token',
      token,
    ]),
    /revoked/,
  );
});

/** `portolan token create` + `portolan cert --once`: the walkthrough for one workload. */
async function onboard(serviceAccount: string, out: string): Promise<void> {
  const data = join(dir, 'data');
  const token = (
    await portolanCli([
      'token',
      'create',
      '--namespace',
      'shop',
      '--service-account',
      serviceAccount,
      '--data-dir',
      data,
    ])
  ).stdout.trim();
  await portolanCli([
    'cert',
    '--ca-addr',
    secureAddress,
    '--root-cert',
    join(dir, 'root-cert.pem'),
    '--out',
    out,
    '--once',
    '--token',
    token,
  ]);
}

test('walkthrough to a call: two VMs with `portolan cert` files, a gRPC bootstrap from `portolan bootstrap --kind grpc`, ISTIO_MUTUAL', async () => {
  writeFileSync(
    join(dir, 'root-cert.pem'),
    (await portolanCli(['ca', 'root', '--data-dir', join(dir, 'data')])).stdout,
  );
  const server = join(dir, 'vm-payments');
  const client = join(dir, 'vm-orders');
  await onboard('payments', server);
  await onboard('orders', client);

  // The payments VM serves only mTLS, with its `portolan cert` files.
  const backend = await startEchoBackend(
    'payments-vm',
    '127.0.0.1',
    0,
    undefined,
    grpc.ServerCredentials.createSsl(
      readFileSync(join(server, 'root-cert.pem')),
      [
        {
          cert_chain: readFileSync(join(server, 'cert-chain.pem')),
          private_key: readFileSync(join(server, 'key.pem')),
        },
      ],
      true,
    ),
  );
  try {
    writeFileSync(
      join(dir, 'payments.yaml'),
      `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: payments, namespace: shop }
spec:
  hosts: [payments.shop.internal]
  ports: [{ number: 7070, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.1, ports: { grpc: ${backend.port} }, serviceAccount: payments }]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: payments, namespace: shop }
spec:
  host: payments.shop.internal
  trafficPolicy: { tls: { mode: ISTIO_MUTUAL } }
`,
    );
    const bootstrap = (
      await portolanCli([
        'bootstrap',
        '--kind',
        'grpc',
        '--node-id',
        'orders-vm-1',
        '--namespace',
        'shop',
        '--service-account',
        'orders',
        '--xds-addr',
        portolan.xdsAddress,
        '--cert-dir',
        client,
      ])
    ).stdout;
    const Client = echoClientClass();
    const orders = new Client(
      'xds:///payments.shop.internal:7070',
      new XdsChannelCredentials(grpc.credentials.createInsecure()),
      {
        'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config': bootstrap,
      },
    );
    try {
      assert.equal(await eventually(() => callEcho(orders, 3000), { timeoutMs: 20_000 }), 'payments-vm');
    } finally {
      orders.close();
    }

    // The same client with its xDS stream over the secure port, authenticated by its `portolan cert`
    // files (through a loopback TLS relay: grpc-js-xds has no TLS channel_creds).
    const viaSecurePort = async (
      certDir: string,
      nodeId: string,
      timeoutMs: number,
    ): Promise<{ relayed: number; call: Promise<string> }> => {
      const [host = '', port = ''] = secureAddress.split(':');
      const relay = await startTlsRelay(
        { host, port: Number(port) },
        {
          ca: readFileSync(join(certDir, 'root-cert.pem')),
          cert: readFileSync(join(certDir, 'cert-chain.pem')),
          key: readFileSync(join(certDir, 'key.pem')),
        },
      );
      const secureBootstrap = (
        await portolanCli([
          'bootstrap',
          '--kind',
          'grpc',
          '--node-id',
          nodeId,
          '--namespace',
          'shop',
          '--service-account',
          'orders',
          '--xds-addr',
          relay.address,
          '--cert-dir',
          client,
        ])
      ).stdout;
      const c = new Client(
        'xds:///payments.shop.internal:7070',
        new XdsChannelCredentials(grpc.credentials.createInsecure()),
        {
          'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config': secureBootstrap,
        },
      );
      const call = eventually(() => callEcho(c, 3000), { timeoutMs });
      await call.catch(() => undefined);
      c.close();
      const relayed = relay.connections();
      await relay.stop();
      return { relayed, call };
    };
    const ok = await viaSecurePort(client, 'orders-vm-2', 20_000);
    assert.equal(await ok.call, 'payments-vm');
    assert.ok(ok.relayed > 0, 'the xDS stream went through the secure port');
    // Claiming orders with the payments VM's certificate: the secure port refuses the stream for the
    // identity it presents, so the client gets no config and no backend gets a call.
    const served = backend.calls();
    const liar = await viaSecurePort(server, 'orders-vm-3', 4000);
    const failed = await liar.call.then(
      (reached) => assert.fail(`the liar's call reached ${reached}`),
      // eventually gives up with its own error; the client's last failure is its cause.
      (err: Error) => err.cause as grpc.ServiceError,
    );
    assert.ok(liar.relayed > 0);
    // The client never got a listener for the target: its calls wait for name resolution.
    assert.equal(failed.code, grpc.status.DEADLINE_EXCEEDED, failed.details);
    assert.match(failed.details, /waiting for name resolution/);
    const refusal = portolan.logs.find(
      (l) => l.msg === 'refusing ADS stream' && String(l.details).startsWith('node orders-vm-3 '),
    );
    assert.ok(refusal, 'the secure port logged why it refused the stream');
    assert.equal(refusal.code, grpc.status.PERMISSION_DENIED);
    assert.equal(
      refusal.details,
      'node orders-vm-3 claims NAMESPACE=shop SERVICE_ACCOUNT=orders but its certificate is spiffe://cluster.local/ns/shop/sa/payments',
    );
    assert.equal(backend.calls(), served, 'no call reached the payments VM');
  } finally {
    await backend.stop();
  }
});
