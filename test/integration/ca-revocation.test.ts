// Revocation on the secure port, in process: revoking a join token, an identity or a serial reaches
// the certificates issued with it — renewals are refused, and the secure ADS streams open with them
// are closed within seconds while other workloads' streams go on; a chain of renewals ends at the
// maximum enrollment age; certificates from before enrollments are adopted at renewal;
// CreateCertificate has a budget per peer.
import { SqliteSharedStore } from '../../store/sqlite-shared.js';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CertificateAuthority } from '../../ca/authority.js';
import { requestCertificate } from '../../ca/ca-client.js';
import { createCsr } from '../../ca/certificates.js';
import { workloadIdentity } from '../../ca/identity.js';
import { createJoinToken } from '../../ca/join-tokens.js';
import { generateKeyPair, privateKeyPem } from '../../ca/keys.js';
import { SecurePort, type SecurePortOptions } from '../../ca/secure-server.js';
import { silentLogger } from '../../log/logger.js';
import { Store } from '../../store/store.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { endpoint, mockService, servicePort } from '../support/model-fixtures.js';
import { openAdsStream, type OpenAdsStream } from './ca-helpers.js';

const ORDERS = workloadIdentity('cluster.local', 'shop', 'orders');
const CART = workloadIdentity('cluster.local', 'shop', 'cart');
const nodeOf = (sa: string, id: string): { id: string; metadata: Record<string, string> } => ({
  id,
  metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: sa },
});

let dir: string;
let store: Store;
let plane: InProcessPlane;
let ca: CertificateAuthority;
let rootPem: string;
const ports: SecurePort[] = [];
const streams: OpenAdsStream[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-ca-revoke-'));
  store = Store.open({ dataDir: dir, logger: silentLogger });
  plane = await startInProcessPlane();
  plane.mock.putService(mockService('cart.revoke.internal', [servicePort('grpc', 7070)]));
  plane.mock.setEndpoints('cart.revoke.internal', [endpoint('127.0.0.9', { grpc: 7070 })]);
  ca = await CertificateAuthority.open({
    material: store.ca,
    trustDomain: 'cluster.local',
    maxTtlSeconds: 86400,
  });
  rootPem = ca.trustBundle();
});

after(async () => {
  for (const s of streams) s.close();
  for (const p of ports) await p.stop();
  await plane.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function securePort(options: Partial<SecurePortOptions> = {}): Promise<string> {
  const port = await SecurePort.start({
    ca,
    store: new SqliteSharedStore(store),
    services: [plane.ads],
    host: '127.0.0.1',
    port: 0,
    serverSans: ['localhost', '127.0.0.1'],
    logger: silentLogger,
    ...options,
  });
  ports.push(port);
  return `127.0.0.1:${port.port}`;
}

interface Held {
  readonly certChainPem: string;
  readonly keyPem: string;
  readonly serial: string;
  readonly notAfter: Date;
}

async function certify(
  address: string,
  auth: { token?: string; current?: Held },
  uri: string,
  ttlSeconds = 3600,
): Promise<Held> {
  const keys = await generateKeyPair('ec-p256');
  const res = await requestCertificate({
    address,
    rootPem,
    csrPem: await createCsr(keys, uri),
    ttlSeconds,
    ...auth,
  });
  const leaf = new X509Certificate(res.certChain[0] ?? '');
  return {
    certChainPem: res.certChain[0] ?? '',
    keyPem: await privateKeyPem(keys.privateKey),
    serial: leaf.serialNumber,
    notAfter: new Date(leaf.validTo),
  };
}

function enroll(address: string, uri: string): { id: string; first: Promise<Held> } {
  const { id, token } = createJoinToken(store.joinTokens, uri, 3600_000, 1);
  return { id, first: certify(address, { token }, uri) };
}

/** The status `s` ended with, or a failure naming `what` after 10 s (never an unbounded wait). */
async function endedWithin(s: OpenAdsStream, what: string): Promise<grpc.StatusObject> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      s.ended,
      sleep(10_000, undefined, { signal: timer.signal }).then(() => {
        throw new Error(`${what}: the stream did not end within 10 s`);
      }),
    ]);
  } finally {
    timer.abort();
  }
}

function stream(address: string, held: Held, sa: string, id: string): OpenAdsStream {
  const s = openAdsStream(address, { rootPem, ...held }, nodeOf(sa, id));
  streams.push(s);
  return s;
}

const codeOf = (err: unknown): number | undefined => (err as { code?: number }).code;

test('revoking a join token reaches its certificates: renewals refused, open secure streams closed, others untouched', async () => {
  const address = await securePort();
  const orders = enroll(address, ORDERS);
  const first = await orders.first;
  const renewed = await certify(address, { current: first }, ORDERS);
  const cart = await enroll(address, CART).first;
  const revokedStream = stream(address, renewed, 'orders', 'orders-vm-1');
  const otherStream = stream(address, cart, 'cart', 'cart-vm-1');
  await eventually(() => assert.ok(revokedStream.responses.length > 0 && otherStream.responses.length > 0));

  assert.equal(store.joinTokens.revoke(orders.id, new Date()), true);

  const status = await eventually(
    () => {
      assert.ok(revokedStream.isEnded(), 'the stream of the revoked certificate is closed');
      return revokedStream.ended;
    },
    { timeoutMs: 10_000 },
  );
  assert.equal(status.code, grpc.status.UNAUTHENTICATED);
  assert.match(status.details, /revoked/);
  await assert.rejects(certify(address, { current: renewed }, ORDERS), (err) => {
    assert.equal(codeOf(err), grpc.status.UNAUTHENTICATED);
    assert.match(String(err), /revoked/);
    return true;
  });
  await assert.rejects(certify(address, { current: first }, ORDERS), /revoked/);
  const again = stream(address, renewed, 'orders', 'orders-vm-1b');
  assert.equal(
    (await endedWithin(again, 'a new stream with the revoked certificate')).code,
    grpc.status.UNAUTHENTICATED,
    'a new stream with it is refused',
  );

  // The other workload's stream is open and still gets pushes.
  assert.equal(otherStream.isEnded(), false);
  const before = otherStream.responses.length;
  plane.mock.putService(mockService('more.revoke.internal', [servicePort('grpc', 7071)]));
  await eventually(() => assert.ok(otherStream.responses.length > before));
});

test('cert revoke --serial: the certificate and the renewals of its enrollment are refused', async () => {
  const address = await securePort();
  const stolen = await enroll(address, ORDERS).first;
  const renewedByThief = await certify(address, { current: stolen }, ORDERS);
  const unrelated = await enroll(address, ORDERS).first; // the same identity, another enrollment
  const outcome = store.revocations.revokeSerial(stolen.serial, new Date(), 'key leaked');
  assert.ok(outcome.enrollmentId);
  await assert.rejects(
    certify(address, { current: renewedByThief }, ORDERS),
    /revoked.*key leaked|has been revoked/,
  );
  await certify(address, { current: unrelated }, ORDERS);
});

test('cert revoke --identity: every enrollment of the identity is cut off; a token created afterwards enrolls it again', async () => {
  const address = await securePort();
  const a = await enroll(address, CART).first;
  const b = await enroll(address, CART).first;
  const open = stream(address, b, 'cart', 'cart-vm-2');
  await eventually(() => assert.ok(open.responses.length > 0));
  store.revocations.revokeIdentity(CART, new Date());
  assert.equal(
    (await endedWithin(open, 'the open stream of the revoked identity')).code,
    grpc.status.UNAUTHENTICATED,
  );
  await assert.rejects(certify(address, { current: a }, CART), /revoked/);
  await assert.rejects(certify(address, { current: b }, CART), /revoked/);
  const back = await enroll(address, CART).first;
  await certify(address, { current: back }, CART);
});

test('a chain of renewals ends at the maximum enrollment age: no certificate of it lives longer', async () => {
  const address = await securePort({ maxEnrollmentAgeSeconds: 120 });
  const started = Date.now();
  const first = await enroll(address, ORDERS).first;
  const renewed = await certify(address, { current: first }, ORDERS, 3600);
  for (const held of [first, renewed])
    assert.ok(
      held.notAfter.getTime() <= started + 121_000,
      `expires by the enrollment's end, not after ${held.notAfter.toISOString()}`,
    );
});

test('a certificate issued before enrollments is adopted at its next renewal', async () => {
  const address = await securePort();
  const keys = await generateKeyPair('ec-p256');
  const { chain } = await ca.sign({ csrPem: await createCsr(keys, ORDERS), identity: ORDERS }); // no enrollment
  const legacy: Held = {
    certChainPem: chain[0] ?? '',
    keyPem: await privateKeyPem(keys.privateKey),
    serial: '',
    notAfter: new Date(),
  };
  const renewed = await certify(address, { current: legacy }, ORDERS);
  const enrollmentId = store.ca.issuedBySerial(renewed.serial)?.enrollmentId;
  assert.ok(enrollmentId);
  assert.equal(store.enrollments.get(enrollmentId)?.tokenId, null);
});

test('CreateCertificate has a budget per peer: beyond it RESOURCE_EXHAUSTED, and the token is not spent', async () => {
  const address = await securePort({ rateLimit: { limit: 2, perMs: 60_000 } });
  const first = await enroll(address, ORDERS).first;
  await certify(address, { current: first }, ORDERS);
  const { token, id } = createJoinToken(store.joinTokens, ORDERS, 3600_000, 1);
  await assert.rejects(certify(address, { token }, ORDERS), (err) => {
    assert.equal(codeOf(err), grpc.status.RESOURCE_EXHAUSTED);
    assert.match(String(err), /peer 127\.0\.0\.1 exceed 2 per 60s \(--ca-rate-limit\): retry in \d+s/);
    return true;
  });
  assert.equal(store.joinTokens.list().find((t) => t.id === id)?.usesLeft, 1);
});
