// The CA on the secure port, in process: join token → first certificate → renewal with the
// certificate; a spent, revoked or unknown token is refused; ADS over TLS refuses a missing
// certificate, a foreign CA's certificate and a node claiming another identity; `portolan cert`'s
// agent renews a short-lived certificate before it expires.
import { SqliteSharedStore } from '../../store/sqlite-shared.js';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CertificateAuthority } from '../../ca/authority.js';
import { requestCertificate } from '../../ca/ca-client.js';
import { createCsr } from '../../ca/certificates.js';
import { workloadIdentity } from '../../ca/identity.js';
import { createJoinToken } from '../../ca/join-tokens.js';
import { generateKeyPair, privateKeyPem } from '../../ca/keys.js';
import { SecurePort } from '../../ca/secure-server.js';
import { CERT_CHAIN_FILE, ROOT_CERT_FILE, runAgent } from '../../ca/workload-agent.js';
import { SDS_CERT_FILE, sdsFiles } from '../../mesh/workload-certs.js';
import { silentLogger } from '../../log/logger.js';
import { Store } from '../../store/store.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { firstAdsAnswer } from './ca-helpers.js';

const ID = workloadIdentity('cluster.local', 'shop', 'orders');
let dir: string;
let store: Store;
let plane: InProcessPlane;
let securePort: SecurePort;
let address: string;
let rootPem: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-ca-int-'));
  store = Store.open({ dataDir: dir, logger: silentLogger });
  plane = await startInProcessPlane();
  plane.mock.putService(mockService('cart.ca.internal', [servicePort('grpc', 7070)]));
  plane.mock.setEndpoints('cart.ca.internal', [endpoint('127.0.0.9', { grpc: 7070 })]);
  const ca = await CertificateAuthority.open({
    material: store.ca,
    trustDomain: 'cluster.local',
    maxTtlSeconds: 86400,
  });
  rootPem = ca.trustBundle();
  securePort = await SecurePort.start({
    ca,
    store: new SqliteSharedStore(store),
    services: [plane.ads],
    host: '127.0.0.1',
    port: 0,
    serverSans: ['localhost', '127.0.0.1'],
    logger: silentLogger,
  });
  address = `127.0.0.1:${securePort.port}`;
});

after(async () => {
  await securePort.stop();
  await plane.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Held {
  readonly certChainPem: string;
  readonly keyPem: string;
}

async function certify(
  auth: { token?: string; current?: Held },
  uri = ID,
  ttlSeconds = 3600,
): Promise<Held & { chain: string[] }> {
  const keys = await generateKeyPair('ec-p256');
  const res = await requestCertificate({
    address,
    rootPem,
    csrPem: await createCsr(keys, uri),
    ttlSeconds,
    ...auth,
  });
  return {
    chain: res.certChain,
    certChainPem: res.certChain[0] ?? '',
    keyPem: await privateKeyPem(keys.privateKey),
  };
}

function grpcCode(err: unknown): number | undefined {
  return (err as { code?: number }).code;
}

test('join token → first certificate → renewal with it; the token cannot be used twice', async () => {
  const { token } = createJoinToken(store.joinTokens, ID, 3600_000, 1);
  const first = await certify({ token });
  assert.equal(first.chain.length, 2);
  assert.equal(new X509Certificate(first.certChainPem).subjectAltName, `URI:${ID}`);
  const renewed = await certify({ current: first });
  assert.notEqual(
    new X509Certificate(renewed.certChainPem).serialNumber,
    new X509Certificate(first.certChainPem).serialNumber,
  );
  await assert.rejects(certify({ token }), (err) => {
    assert.equal(grpcCode(err), grpc.status.UNAUTHENTICATED);
    assert.match(String(err), /used up/);
    return true;
  });
  const logged = store.ca.issued().filter((c) => c.identity === ID);
  assert.ok(logged.length >= 2, 'every issuance is in the store');
});

test('a revoked token is refused at once; an unknown one too', async () => {
  const { id, token } = createJoinToken(store.joinTokens, ID, 3600_000, 5);
  await certify({ token });
  assert.equal(store.joinTokens.revoke(id, new Date()), true);
  await assert.rejects(certify({ token }), /revoked/);
  await assert.rejects(certify({ token: `${token}x` }), /unknown join token/);
});

test('a CSR for another identity than the token is refused, and does not spend the token', async () => {
  const { token } = createJoinToken(store.joinTokens, ID, 3600_000, 1);
  await assert.rejects(certify({ token }, workloadIdentity('cluster.local', 'shop', 'payments')), (err) => {
    assert.equal(grpcCode(err), grpc.status.PERMISSION_DENIED);
    return true;
  });
  await certify({ token }); // still has its one use
});

test('a TTL above the maximum is refused with INVALID_ARGUMENT; no credentials is UNAUTHENTICATED', async () => {
  const { token } = createJoinToken(store.joinTokens, ID, 3600_000, 1);
  await assert.rejects(
    certify({ token }, ID, 2 * 86400),
    (err) => grpcCode(err) === grpc.status.INVALID_ARGUMENT,
  );
  await assert.rejects(certify({}), (err) => grpcCode(err) === grpc.status.UNAUTHENTICATED);
});

test('secure ADS serves a node whose metadata matches its certificate', async () => {
  const held = await certify({ token: createJoinToken(store.joinTokens, ID, 3600_000).token });
  const answer = await firstAdsAnswer(
    address,
    { rootPem, ...held },
    { id: 'orders-vm-1', metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: 'orders' } },
  );
  assert.equal(answer.kind, 'response', JSON.stringify(answer));
  if (answer.kind === 'response') assert.equal(answer.resources, 1);
});

test('secure ADS refuses no certificate, a foreign CA certificate, and a node claiming another identity', async () => {
  const node = { id: 'orders-vm-2', metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: 'orders' } };
  const none = await firstAdsAnswer(address, { rootPem }, node);
  assert.deepEqual([none.kind, none.kind === 'status' && none.code], ['status', grpc.status.UNAUTHENTICATED]);

  const otherDir = mkdtempSync(join(tmpdir(), 'portolan-ca-other-'));
  const otherStore = Store.open({ dataDir: otherDir, logger: silentLogger });
  try {
    const other = await CertificateAuthority.open({ material: otherStore.ca, trustDomain: 'cluster.local' });
    const keys = await generateKeyPair('ec-p256');
    const { chain } = await other.sign({ csrPem: await createCsr(keys, ID), identity: ID });
    const foreign = await firstAdsAnswer(
      address,
      { rootPem, certChainPem: chain[0] ?? '', keyPem: await privateKeyPem(keys.privateKey) },
      node,
    );
    // Either the TLS layer or the authorizer refuses it; never a response.
    assert.equal(foreign.kind, 'status', JSON.stringify(foreign));
    if (foreign.kind === 'status')
      assert.ok(
        [grpc.status.UNAUTHENTICATED, grpc.status.UNAVAILABLE].includes(foreign.code),
        foreign.details,
      );
  } finally {
    otherStore.close();
    rmSync(otherDir, { recursive: true, force: true });
  }

  const held = await certify({ token: createJoinToken(store.joinTokens, ID, 3600_000).token });
  const liar = await firstAdsAnswer(
    address,
    { rootPem, ...held },
    { id: 'orders-vm-3', metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: 'payments' } },
  );
  assert.equal(liar.kind, 'status');
  if (liar.kind === 'status') {
    assert.equal(liar.code, grpc.status.PERMISSION_DENIED);
    assert.match(
      liar.details,
      /SERVICE_ACCOUNT=payments but its certificate is spiffe:\/\/cluster\.local\/ns\/shop\/sa\/orders/,
    );
  }
});

test('the workload agent renews a short-lived certificate before it expires, with the certificate', async () => {
  const out = join(dir, 'vm');
  const rootFile = join(dir, 'root.pem');
  writeFileSync(rootFile, rootPem);
  const { token } = createJoinToken(store.joinTokens, ID, 3600_000, 1); // one use: renewals must use the cert
  const abort = new AbortController();
  const agent = runAgent(
    { caAddress: address, rootCertFile: rootFile, outDir: out, token, ttlSeconds: 3, logger: silentLogger },
    abort.signal,
  );
  try {
    const serialAt = (): string => new X509Certificate(readFileSync(join(out, CERT_CHAIN_FILE))).serialNumber;
    const first = await eventually(() => serialAt(), { timeoutMs: 5000 });
    const firstNotAfter = Date.parse(new X509Certificate(readFileSync(join(out, CERT_CHAIN_FILE))).validTo);
    await eventually(
      () => {
        assert.notEqual(serialAt(), first);
      },
      { timeoutMs: 6000 },
    );
    assert.ok(Date.now() < firstNotAfter, 'renewed before the first certificate expired');
    assert.equal(readFileSync(join(out, ROOT_CERT_FILE), 'utf8').trim(), rootPem.trim());
    // Envoy's file-based SDS files sit beside the PEM files and name them by absolute path.
    const sds = JSON.parse(readFileSync(join(out, SDS_CERT_FILE), 'utf8')) as unknown;
    assert.deepEqual(sds, sdsFiles(out)[SDS_CERT_FILE]);
  } finally {
    abort.abort();
    await agent;
  }
});
