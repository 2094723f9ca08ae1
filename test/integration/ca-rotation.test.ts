// Root rotation on a running secure port, on the CA's clock (which the test moves): `portolan ca
// rotate` (the CLI, as another process) adds a root; the workload agent's next renewal picks up the
// two-root bundle while still certified by the old root, then, after the switch, gets a certificate
// from the new root; the secure port accepts both roots' certificates until the old root retires,
// then only the new one's. Separately, in real (short) time, a 2 s server certificate is replaced on
// the listening port without a restart.
import { SqliteSharedStore } from '../../store/sqlite-shared.js';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { CLUSTER } from '../../xds/proto/type-urls.js';
import { CertificateAuthority } from '../../ca/authority.js';
import { issueLeaf, randomSerial } from '../../ca/certificates.js';
import { workloadIdentity } from '../../ca/identity.js';
import { createJoinToken } from '../../ca/join-tokens.js';
import { generateKeyPair, importSigningKey, privateKeyPem } from '../../ca/keys.js';
import { RootStore } from '../../ca/root-store.js';
import { SecurePort } from '../../ca/secure-server.js';
import {
  CERT_CHAIN_FILE,
  KEY_FILE,
  ROOT_CERT_FILE,
  obtainCertificate,
  type AgentOptions,
} from '../../ca/workload-agent.js';
import { x509 } from '../../ca/x509.js';
import { silentLogger } from '../../log/logger.js';
import { Store } from '../../store/store.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane, type InProcessPlane } from '../support/in-process.js';
import { firstAdsAnswer, type ClientTls } from './ca-helpers.js';

const MAIN = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const run = promisify(execFile);
const ID = workloadIdentity('cluster.local', 'shop', 'orders');
const HOUR_S = 3600;
const NODE = { id: 'orders-vm', metadata: { NAMESPACE: 'shop', SERVICE_ACCOUNT: 'orders' } };

let base: string;
let plane: InProcessPlane;
const stores: Store[] = [];

before(async () => {
  base = mkdtempSync(join(tmpdir(), 'portolan-ca-rotation-int-'));
  plane = await startInProcessPlane();
});

after(async () => {
  await plane.stop();
  for (const s of stores) s.close();
  rmSync(base, { recursive: true, force: true });
});

/** Each test has its own data directory, so its roots are its own. */
function openStore(name: string): { dir: string; store: Store } {
  const dir = join(base, name);
  mkdirSync(dir);
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  stores.push(store);
  return { dir, store };
}

function pemCerts(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map(
    (p) => new X509Certificate(p),
  );
}

function signedBy(leaf: X509Certificate, root: X509Certificate): boolean {
  return leaf.checkIssued(root) && leaf.verify(root.publicKey);
}

/** The certificate a fresh TLS handshake with the secure port presents. */
async function serverCertificate(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port, ALPNProtocols: ['h2'], rejectUnauthorized: false },
      () => {
        const raw = socket.getPeerCertificate().raw;
        socket.destroy();
        resolve(new X509Certificate(raw));
      },
    );
    socket.on('error', reject);
  });
}

/** A one-hour leaf signed directly with the old root's key: outlives the old root's retirement. */
async function longLivedLeafFromFirstRoot(store: Store): Promise<ClientTls> {
  const [first] = new RootStore(store.ca, undefined).list();
  assert.ok(first);
  const issuer = new x509.X509Certificate(first.certPem);
  const signer = await importSigningKey(first.key);
  const keys = await generateKeyPair('ec-p256');
  const now = Date.now();
  const leaf = await issueLeaf({
    issuer,
    issuerKey: signer.privateKey,
    publicKey: await x509.PublicKey.create(keys.publicKey),
    uris: [ID],
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 3600_000),
    serial: randomSerial(),
  });
  return { rootPem: '', certChainPem: leaf.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

test('ca rotate: the agent gets the two-root bundle, then a new-root certificate; the old root retires', async () => {
  const { dir, store } = openStore('rotate');
  // The CA's clock stands still unless moved: each phase of the rotation (overlap, switch,
  // retirement) holds for as long as its assertions take, however slow the machine. Certificates are
  // backdated past the furthest move, so TLS (which checks them against the system clock) takes them.
  let now = new Date();
  const clock = (): Date => now;
  const ca = await CertificateAuthority.open({
    material: store.ca,
    trustDomain: 'cluster.local',
    defaultTtlSeconds: 2 * HOUR_S,
    maxTtlSeconds: 2 * HOUR_S,
    backdateSeconds: 6 * HOUR_S,
    now: clock,
  });
  const port = await SecurePort.start({
    ca,
    store: new SqliteSharedStore(store),
    services: [plane.ads],
    host: '127.0.0.1',
    port: 0,
    serverSans: ['127.0.0.1'],
    logger: silentLogger,
    refreshMs: 100,
    serverCertTtlSeconds: HOUR_S,
  });
  const address = `127.0.0.1:${port.port}`;
  const [rootA] = pemCerts(ca.trustBundle());
  assert.ok(rootA);
  const out = join(dir, 'vm');
  const rootFile = join(dir, 'root-cert.pem');
  writeFileSync(rootFile, ca.trustBundle());
  const { token } = createJoinToken(store.joinTokens, ID, 600_000, 1);
  // The workload agent, one renewal at a time on the CA's clock (runAgent's loop: obtain, wait until
  // renewAt, obtain again with the current certificate).
  const agent: AgentOptions = {
    caAddress: address,
    rootCertFile: rootFile,
    outDir: out,
    token,
    logger: silentLogger,
  };
  let issued = await obtainCertificate(agent, now);
  const renew = async (): Promise<void> => {
    issued = await obtainCertificate(agent, now);
  };
  /** Moves the clock to `at`, renewing on the agent's schedule on the way. */
  const agentRunsUntil = async (at: Date): Promise<void> => {
    while (issued.renewAt <= at) {
      now = issued.renewAt;
      await renew();
    }
    now = at;
  };
  const leaf = (): X509Certificate => new X509Certificate(readFileSync(join(out, CERT_CHAIN_FILE)));
  const bundle = (): string[] =>
    pemCerts(readFileSync(join(out, ROOT_CERT_FILE), 'utf8'))
      .map((r) => r.fingerprint256)
      .sort();
  const agentTls = (): ClientTls => ({
    rootPem: readFileSync(join(out, ROOT_CERT_FILE), 'utf8'),
    certChainPem: readFileSync(join(out, CERT_CHAIN_FILE), 'utf8'),
    keyPem: readFileSync(join(out, KEY_FILE), 'utf8'),
  });
  const adsAnswer = (tls: ClientTls) => firstAdsAnswer(address, tls, NODE);
  const accepted = { kind: 'response', typeUrl: CLUSTER, resources: 0 };
  const forgedFromA = await longLivedLeafFromFirstRoot(store);
  try {
    assert.ok(signedBy(leaf(), rootA));
    assert.deepEqual(bundle(), [rootA.fingerprint256]);
    assert.ok(signedBy(await serverCertificate(port.port), rootA));

    // `portolan ca rotate` from another process, on the same data directory.
    const { stderr } = await run(
      process.execPath,
      [MAIN, 'ca', 'rotate', '--data-dir', dir, '--overlap', '1h', '--ca-max-ttl', '2h'],
      { timeout: 20_000 },
    );
    assert.match(stderr, /new root added to the trust bundle/);
    const rootB = pemCerts(ca.trustBundle()).find((r) => r.fingerprint256 !== rootA.fingerprint256);
    assert.ok(rootB, 'the CA sees the new root');
    const [oldRoot, newRoot] = new RootStore(store.ca, undefined).list();
    assert.ok(newRoot && oldRoot?.retireAt, 'the rotation scheduled a switch and a retirement');
    const switchAt = new Date(newRoot.signingFrom);
    const retireAt = new Date(oldRoot.retireAt);
    const both = [rootA.fingerprint256, rootB.fingerprint256].sort();

    // Overlap: at its next renewal the agent holds both roots, still certified by the old one.
    await renew();
    assert.deepEqual(bundle(), both);
    assert.ok(signedBy(leaf(), rootA), 'signed by the old root until the switch');
    assert.deepEqual(await adsAnswer(agentTls()), accepted);
    assert.deepEqual(await adsAnswer({ ...forgedFromA, rootPem: agentTls().rootPem }), accepted);

    // Switch: the agent's next certificate, and the port's own, come from the new root; the old root
    // is still trusted.
    await agentRunsUntil(new Date(switchAt.getTime() + 1000));
    await renew();
    assert.ok(signedBy(leaf(), rootB), 'signed by the new root after the switch');
    assert.deepEqual(bundle(), both);
    await eventually(async () => assert.ok(signedBy(await serverCertificate(port.port), rootB)), {
      timeoutMs: 5000,
    });
    assert.deepEqual(await adsAnswer(agentTls()), accepted);
    assert.deepEqual(await adsAnswer({ ...forgedFromA, rootPem: agentTls().rootPem }), accepted);

    // Retirement (overlap + max TTL): the old root leaves the bundle and the port no longer trusts it.
    await agentRunsUntil(new Date(retireAt.getTime() + 1000));
    await renew();
    assert.deepEqual(bundle(), [rootB.fingerprint256]);
    assert.ok(signedBy(leaf(), rootB));
    const refused = await eventually(
      async () => {
        const answer = await adsAnswer({ ...forgedFromA, rootPem: agentTls().rootPem });
        assert.equal(answer.kind, 'status', JSON.stringify(answer));
        return answer;
      },
      { timeoutMs: 5000 },
    );
    assert.deepEqual(refused, {
      kind: 'status',
      code: grpc.status.UNAUTHENTICATED,
      details: 'no client certificate trusted by this CA was presented',
    });
    assert.deepEqual(await adsAnswer(agentTls()), accepted);
  } finally {
    await port.stop();
  }
});

test('the secure port replaces a short-lived server certificate without a restart', async () => {
  const { store } = openStore('renew');
  const ca = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
  const port = await SecurePort.start({
    ca,
    store: new SqliteSharedStore(store),
    services: [plane.ads],
    host: '127.0.0.1',
    port: 0,
    serverSans: ['127.0.0.1'],
    logger: silentLogger,
    refreshMs: 100,
    serverCertTtlSeconds: 2,
  });
  try {
    const first = await serverCertificate(port.port);
    const firstNotAfter = Date.parse(first.validTo);
    const second = await eventually(
      async () => {
        const now = await serverCertificate(port.port);
        assert.notEqual(now.serialNumber, first.serialNumber);
        return now;
      },
      { timeoutMs: 5000 },
    );
    assert.ok(Date.parse(second.validTo) > firstNotAfter);
    // The dialled address, and the control plane's identity, which workloads never get (#17 item 10).
    assert.equal(
      second.subjectAltName,
      'URI:spiffe://cluster.local/ns/portolan-system/sa/portolan-control-plane, IP Address:127.0.0.1',
    );
    // The same listener still serves ADS with the new certificate.
    const held = await longLivedLeafFromFirstRoot(store);
    const answer = await firstAdsAnswer(
      `127.0.0.1:${port.port}`,
      { ...held, rootPem: ca.trustBundle() },
      NODE,
    );
    assert.equal(answer.kind, 'response', JSON.stringify(answer));
  } finally {
    await port.stop();
  }
});
