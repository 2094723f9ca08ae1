// Workload mTLS between proxyless gRPC workloads, with the real @grpc/grpc-js-xds client (gRFC A29):
// a DestinationRule `tls.mode: ISTIO_MUTUAL` in the config directory makes the client present the
// certificate from its bootstrap's `file_watcher` provider and check the server's SPIFFE identity.
// The server is a gRPC server requiring client certificates from our CA (Portolan serves no A36
// server listeners). A call with the workload certificate succeeds; one from a workload without a
// certificate fails, and so does a call to a server whose identity is not the service's: each
// refusal is matched by its reason, and the refused server is shown to have received no call.
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

/** A failed call's status and details, or a failure of the assertion when the call succeeded. */
async function refusal(call: Promise<string>): Promise<grpc.ServiceError> {
  return call.then(
    (backend) => assert.fail(`the call reached ${backend}`),
    (err: grpc.ServiceError) => err,
  );
}

/** A direct (no xDS) mTLS client of the server at `port`, holding `issued` (it checks only the CA). */
function directMtlsClient(port: number, issued: Issued): EchoClient {
  const Client = echoClientClass();
  const client = new Client(
    `127.0.0.1:${port}`,
    grpc.credentials.createSsl(
      Buffer.from(ca.trustBundle()),
      Buffer.from(issued.keyPem),
      Buffer.from(issued.chainPem),
      // The server's certificate names only its SPIFFE identity (a URI SAN), no IP.
      { checkServerIdentity: () => undefined },
    ),
  );
  clients.push(client);
  return client;
}

test('a workload without a certificate cannot call it, and no call reaches the server', async () => {
  const payments = backends[0];
  assert.ok(payments);
  const callsBefore = payments.calls();
  // ISTIO_MUTUAL needs the workload's identity: with none in its certificate provider, the client
  // cannot build the TLS credentials for the cluster.
  const client = xdsClient('batch-1', await certDir('batch'), false);
  const noIdentity = await refusal(callEcho(client, 5000));
  assert.equal(noIdentity.code, grpc.status.UNAVAILABLE, noIdentity.details);
  assert.match(noIdentity.details, /Failed to load credentials/);

  // A client with no certificate provider at all rejects the cluster that names one (gRFC A29).
  const Client = echoClientClass();
  const unprovided = new Client(TARGET, grpc.credentials.createInsecure(), {
    [BOOTSTRAP_OPTION]: JSON.stringify(bootstrapFor(plane.address, 'plain-1')),
  });
  clients.push(unprovided);
  const rejected = await refusal(callEcho(unprovided, 5000));
  assert.equal(rejected.code, grpc.status.UNAVAILABLE, rejected.details);
  assert.match(rejected.details, /Unmatched UpstreamTlsContext\.tls_certificate_provider_instance/);

  // Straight to the port in plaintext: the server speaks only TLS. The same port answers a direct
  // mTLS call with a workload certificate, so the plaintext is what fails.
  const plain = new Client(`127.0.0.1:${payments.port}`, grpc.credentials.createInsecure());
  clients.push(plain);
  const plaintext = await refusal(callEcho(plain, 5000));
  assert.equal(plaintext.code, grpc.status.UNAVAILABLE, plaintext.details);
  assert.match(plaintext.details, /Failed to connect|Connection dropped/);
  assert.equal(payments.calls(), callsBefore, 'none of these calls reached the server');
  assert.equal(await callEcho(directMtlsClient(payments.port, await issue('orders'))), 'payments-1');
});

test("the client refuses a server whose SPIFFE identity is not one of the service's", async () => {
  const intruder = await mtlsBackend('intruder', 'intruder');
  writeConfig(intruder.port); // the endpoint moves; its declared service account stays `payments`
  await eventually(() =>
    assert.equal(plane.discovery.catalog().endpoints(PAYMENTS, 7070)[0]?.port, intruder.port),
  );
  const client = xdsClient('orders-2', await certDir('orders-2', 'orders'), true);
  const refused = await refusal(callEcho(client, 5000));
  assert.equal(refused.code, grpc.status.UNAVAILABLE, refused.details);
  assert.match(refused.details, /No matching subject alternative name found in certificate/);
  assert.equal(intruder.calls(), 0, 'the intruder got no call');
  // The intruder itself is a working server: a direct mTLS call (not checking its identity) reaches it.
  assert.equal(await callEcho(directMtlsClient(intruder.port, await issue('orders'))), 'intruder');
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
  const ledger = addEchoService(server, 'ledger-1');
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
    const served = ledger.calls();
    const withoutCert = xdsClient('batch-2', await certDir('batch-2'), false, target);
    const noIdentity = await refusal(callEcho(withoutCert, 5000));
    assert.equal(noIdentity.code, grpc.status.UNAVAILABLE, noIdentity.details);
    assert.match(noIdentity.details, /Failed to load credentials/);
    // Straight to the port in plaintext: the server's listener (from Portolan, STRICT) requires TLS.
    const Client = echoClientClass();
    const direct = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    clients.push(direct);
    const plaintext = await refusal(callEcho(direct, 5000));
    assert.equal(plaintext.code, grpc.status.UNAVAILABLE, plaintext.details);
    assert.match(plaintext.details, /Failed to connect|Connection dropped/);
    assert.equal(ledger.calls(), served, 'neither call reached the server');
  } finally {
    server.forceShutdown();
  }
});
