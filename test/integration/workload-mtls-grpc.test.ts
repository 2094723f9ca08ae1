// Workload mTLS between proxyless gRPC workloads, with the real @grpc/grpc-js-xds client (gRFC A29):
// a DestinationRule `tls.mode: ISTIO_MUTUAL` in the config directory makes the client present the
// certificate from its bootstrap's `file_watcher` provider and check the server's SPIFFE identity.
// The server is a gRPC server requiring client certificates from our CA (Portolan serves no A36
// server listeners). A call with the workload certificate succeeds; one from a workload without a
// certificate fails, and so does a call to a server whose identity is not the service's.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { XdsChannelCredentials, XdsServer, XdsServerCredentials } from '@grpc/grpc-js-xds';
import { CertificateAuthority } from '../../ca/authority.js';
import { createCsr } from '../../ca/certificates.js';
import { workloadIdentity } from '../../ca/identity.js';
import { generateKeyPair, privateKeyPem } from '../../ca/keys.js';
import { silentLogger } from '../../log/logger.js';
import { Store } from '../../store/store.js';
import { GRPC_SERVER_LISTENER_TEMPLATE } from '../../xds/generators/grpc/server-listener.js';
import { grpcCertificateProviders } from '../../mesh/workload-certs.js';
import {
  addEchoService,
  callEcho,
  echoClientClass,
  startEchoBackend,
  type EchoBackend,
  type EchoClient,
} from '../support/echo-backend.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { bootstrapFor } from '../support/xds-client.js';

const BOOTSTRAP_OPTION = 'grpc.TEST_ONLY_DO_NOT_USE_IN_PROD.xds_bootstrap_config';
const PAYMENTS = 'payments.shop.internal';
const TARGET = `xds:///${PAYMENTS}:7070`;
const LEDGER = 'ledger.shop.internal';

let dir: string;
let store: Store;
let ca: CertificateAuthority;
let plane: InProcessPlane;
const backends: EchoBackend[] = [];
const clients: EchoClient[] = [];

interface Issued {
  readonly chainPem: string;
  readonly keyPem: string;
}

async function issue(serviceAccount: string): Promise<Issued> {
  const id = workloadIdentity('cluster.local', 'shop', serviceAccount);
  const keys = await generateKeyPair('ec-p256');
  const { chain } = await ca.sign({ csrPem: await createCsr(keys, id), identity: id });
  return { chainPem: chain.slice(0, -1).join('\n'), keyPem: await privateKeyPem(keys.privateKey) };
}

/** A gRPC server that requires a client certificate from our roots, presenting `serviceAccount`'s. */
async function mtlsBackend(name: string, serviceAccount: string): Promise<EchoBackend> {
  const own = await issue(serviceAccount);
  const credentials = grpc.ServerCredentials.createSsl(
    Buffer.from(ca.trustBundle()),
    [{ cert_chain: Buffer.from(own.chainPem), private_key: Buffer.from(own.keyPem) }],
    true,
  );
  const backend = await startEchoBackend(name, '127.0.0.1', 0, undefined, credentials);
  backends.push(backend);
  return backend;
}

/** `portolan cert`'s files for a workload; without `serviceAccount`, only the trust bundle. */
async function certDir(name: string, serviceAccount?: string): Promise<string> {
  const out = join(dir, name);
  mkdirSync(out);
  writeFileSync(join(out, 'root-cert.pem'), ca.trustBundle());
  if (serviceAccount) {
    const held = await issue(serviceAccount);
    writeFileSync(join(out, 'cert-chain.pem'), held.chainPem);
    writeFileSync(join(out, 'key.pem'), held.keyPem);
  }
  return out;
}

function xdsClient(nodeId: string, out: string, withIdentity: boolean, target = TARGET): EchoClient {
  const providers = grpcCertificateProviders(out) as { default: { config: Record<string, string> } };
  if (!withIdentity) {
    delete providers.default.config.certificate_file;
    delete providers.default.config.private_key_file;
  }
  const bootstrap = { ...bootstrapFor(plane.address, nodeId), certificate_providers: providers };
  const Client = echoClientClass();
  const client = new Client(target, new XdsChannelCredentials(grpc.credentials.createInsecure()), {
    [BOOTSTRAP_OPTION]: JSON.stringify(bootstrap),
  });
  clients.push(client);
  return client;
}

function writeConfig(backendPort: number): void {
  writeFileSync(
    join(dir, 'config', 'payments.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: payments, namespace: shop }
spec:
  hosts: [${PAYMENTS}]
  ports: [{ number: 7070, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.1, ports: { grpc: ${backendPort} }, serviceAccount: payments }]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: payments, namespace: shop }
spec:
  host: ${PAYMENTS}
  trafficPolicy: { tls: { mode: ISTIO_MUTUAL } }
`,
  );
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-mtls-grpc-'));
  mkdirSync(join(dir, 'config'));
  mkdirSync(join(dir, 'data'));
  store = Store.open({ dataDir: join(dir, 'data'), logger: silentLogger });
  ca = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
  const backend = await mtlsBackend('payments-1', 'payments');
  writeConfig(backend.port);
  plane = await startInProcessPlane({ configDir: join(dir, 'config') });
});

after(async () => {
  for (const c of clients) c.close();
  for (const b of backends) await b.stop();
  await plane.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

test('ISTIO_MUTUAL: a workload with its certificate calls the mTLS-only server through xDS', async () => {
  const client = xdsClient('orders-1', await certDir('orders', 'orders'), true);
  const backend = await eventually(() => callEcho(client, 3000), { timeoutMs: 15_000 });
  assert.equal(backend, 'payments-1');
});

test('a workload without a certificate cannot call it', async () => {
  const client = xdsClient('batch-1', await certDir('batch'), false);
  await assert.rejects(callEcho(client, 5000), (err: grpc.ServiceError) => {
    assert.equal(err.code, grpc.status.UNAVAILABLE, err.details);
    return true;
  });
  // Plaintext, ignoring the cluster's security, fails too: the server speaks only TLS.
  const Client = echoClientClass();
  const plain = new Client(TARGET, grpc.credentials.createInsecure(), {
    [BOOTSTRAP_OPTION]: JSON.stringify(bootstrapFor(plane.address, 'plain-1')),
  });
  clients.push(plain);
  await assert.rejects(
    callEcho(plain, 5000),
    (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
  );
});

test("the client refuses a server whose SPIFFE identity is not one of the service's", async () => {
  const intruder = await mtlsBackend('intruder', 'intruder');
  writeConfig(intruder.port); // the endpoint moves; its declared service account stays `payments`
  await eventually(() =>
    assert.equal(plane.discovery.catalog().endpoints(PAYMENTS, 7070)[0]?.port, intruder.port),
  );
  const client = xdsClient('orders-2', await certDir('orders-2', 'orders'), true);
  await assert.rejects(callEcho(client, 5000), (err: grpc.ServiceError) => {
    assert.equal(err.code, grpc.status.UNAVAILABLE, err.details);
    return true;
  });
});

/** A free loopback port (XdsServer binds a port it is told, not 0). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof addr === 'object' && addr ? addr.port : 0;
}

test('A36: an XdsServer under PeerAuthentication STRICT gets mTLS from Portolan; with and without a certificate', async () => {
  const port = await freePort();
  writeFileSync(
    join(dir, 'config', 'ledger.yaml'),
    `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: ledger, namespace: shop }
spec:
  hosts: [${LEDGER}]
  ports: [{ number: 7070, name: grpc, protocol: GRPC }]
  resolution: STATIC
  endpoints: [{ address: 127.0.0.1, ports: { grpc: ${port} }, serviceAccount: ledger }]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: { name: ledger, namespace: shop }
spec:
  host: ${LEDGER}
  trafficPolicy: { tls: { mode: ISTIO_MUTUAL } }
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: { name: ledger, namespace: shop }
spec:
  selector: { matchLabels: { app: ledger } }
  mtls: { mode: STRICT }
`,
  );
  await eventually(() => assert.equal(plane.discovery.catalog().endpoints(LEDGER, 7070)[0]?.port, port));
  const serverBootstrap = {
    ...bootstrapFor(plane.address, 'ledger-1'),
    node: {
      id: 'ledger-1',
      cluster: 'ledger',
      metadata: { NAMESPACE: 'shop', LABELS: { app: 'ledger' } },
      locality: {},
    },
    certificate_providers: grpcCertificateProviders(await certDir('ledger', 'ledger')),
    server_listener_resource_name_template: GRPC_SERVER_LISTENER_TEMPLATE,
  };
  const server = new XdsServer({ [BOOTSTRAP_OPTION]: JSON.stringify(serverBootstrap) });
  addEchoService(server, 'ledger-1');
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(
      `127.0.0.1:${port}`,
      new XdsServerCredentials(grpc.ServerCredentials.createInsecure()),
      (err) => (err ? reject(err) : resolve()),
    ),
  );
  try {
    const target = `xds:///${LEDGER}:7070`;
    const withCert = xdsClient('orders-3', await certDir('orders-3', 'orders'), true, target);
    assert.equal(await eventually(() => callEcho(withCert, 3000), { timeoutMs: 15_000 }), 'ledger-1');
    const withoutCert = xdsClient('batch-2', await certDir('batch-2'), false, target);
    await assert.rejects(
      callEcho(withoutCert, 5000),
      (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
    );
    // Straight to the port in plaintext: the server's listener requires TLS.
    const Client = echoClientClass();
    const direct = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    clients.push(direct);
    await assert.rejects(
      callEcho(direct, 5000),
      (err: grpc.ServiceError) => err.code === grpc.status.UNAVAILABLE,
    );
  } finally {
    server.forceShutdown();
  }
});
