// The CA's certificates: parsed by Node, verified by openssl against the root; refusals of foreign
// SANs, over-long TTLs and partial plug-in CA directories.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CaRequestError, CertificateAuthority } from '../../../ca/authority.js';
import { createCsr, createRoot, issueLeaf, randomSerial } from '../../../ca/certificates.js';
import { generateKeyPair, privateKeyPem } from '../../../ca/keys.js';
import { CaSetupError } from '../../../ca/plugin-ca.js';
import { x509 } from '../../../ca/x509.js';
import { silentLogger } from '../../../log/logger.js';
import { Store } from '../../../store/store.js';

const ID = 'spiffe://cluster.local/ns/shop/sa/orders';
let dir: string;
let store: Store;
let ca: CertificateAuthority;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-ca-'));
  store = Store.open({ dataDir: dir, logger: silentLogger });
  ca = await CertificateAuthority.open({
    material: store.ca,
    trustDomain: 'cluster.local',
    maxTtlSeconds: 7 * 86400,
  });
});

after(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function opensslVerify(rootPem: string, chainPems: readonly string[], purpose = 'sslclient'): string {
  const rootFile = join(dir, 'root.pem');
  const leafFile = join(dir, 'leaf.pem');
  const untrusted = join(dir, 'untrusted.pem');
  writeFileSync(rootFile, rootPem);
  writeFileSync(leafFile, chainPems[0] ?? '');
  writeFileSync(untrusted, chainPems.slice(1, -1).join('\n') || (chainPems[0] ?? ''));
  return execFileSync(
    'openssl',
    ['verify', '-purpose', purpose, '-CAfile', rootFile, '-untrusted', untrusted, leafFile],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

async function csrFor(uri: string): Promise<string> {
  return createCsr(await generateKeyPair('ec-p256'), uri);
}

test('the first start creates a 10-year self-signed ECDSA P-256 root, kept across reopen', async () => {
  const root = new X509Certificate(ca.trustBundle());
  assert.equal(root.ca, true);
  assert.equal(root.checkIssued(root), true);
  assert.equal(root.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  const years = (Date.parse(root.validTo) - Date.parse(root.validFrom)) / (365.25 * 86400_000);
  assert.ok(years > 9.9 && years < 10.1, `lifetime ${years} years`);
  const again = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
  assert.equal(again.trustBundle(), ca.trustBundle());
});

test('an issued certificate carries the SPIFFE URI, leaf usages, a backdated NotBefore, and verifies with openssl', async () => {
  const before = Date.now();
  const { chain } = await ca.sign({ csrPem: await csrFor(ID), identity: ID, ttlSeconds: 3600 });
  assert.equal(chain.length, 2);
  const leaf = new X509Certificate(chain[0] ?? '');
  const root = new X509Certificate(chain[1] ?? '');
  assert.equal(chain[1]?.trim(), ca.trustBundle().trim(), 'root last');
  assert.equal(leaf.subjectAltName, `URI:${ID}`);
  assert.equal(leaf.ca, false);
  assert.equal(leaf.verify(root.publicKey), true);
  assert.deepEqual([...(leaf.keyUsage ?? [])].sort(), ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
  assert.ok(Date.parse(leaf.validFrom) < before - 60_000, 'NotBefore backdated for clock skew');
  const life = Date.parse(leaf.validTo) - before;
  assert.ok(life > 3590_000 && life < 3610_000, `lifetime ${life} ms`);
  assert.match(opensslVerify(chain[1] ?? '', chain), /leaf\.pem: OK/);
  assert.match(opensslVerify(chain[1] ?? '', chain, 'sslserver'), /leaf\.pem: OK/);
  const text = execFileSync('openssl', ['x509', '-noout', '-text'], { input: chain[0], encoding: 'utf8' });
  assert.match(text, /Key Usage: critical\s+Digital Signature, Key Encipherment/);
  assert.match(text, /Basic Constraints: critical\s+CA:FALSE/);
  const logged = store.ca.issued().find((c) => c.serial === leaf.serialNumber.toLowerCase());
  assert.equal(logged?.identity, ID);
});

test('no TTL asks for the default of 24 h', async () => {
  const { cert } = await ca.sign({ csrPem: await csrFor(ID), identity: ID });
  const hours = (cert.notAfter.getTime() - Date.now()) / 3600_000;
  assert.ok(hours > 23.9 && hours <= 24, `${hours} h`);
});

test('a CSR whose SAN is not the caller identity is refused', async () => {
  const foreign = await csrFor('spiffe://cluster.local/ns/shop/sa/payments');
  await assert.rejects(ca.sign({ csrPem: foreign, identity: ID }), (err: unknown) => {
    assert.ok(err instanceof CaRequestError);
    assert.equal(err.kind, 'denied');
    assert.match(err.message, /must be exactly the caller's identity/);
    return true;
  });
  const extra = await x509.Pkcs10CertificateRequestGenerator.create({
    keys: await generateKeyPair('ec-p256'),
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: [
      new x509.SubjectAlternativeNameExtension([
        { type: 'url', value: ID },
        { type: 'dns', value: 'evil.example' },
      ]),
    ],
  });
  await assert.rejects(ca.sign({ csrPem: extra.toString('pem'), identity: ID }), /must be exactly/);
  await assert.rejects(
    ca.sign({
      csrPem: await csrFor('spiffe://other.domain/ns/shop/sa/orders'),
      identity: 'spiffe://other.domain/ns/shop/sa/orders',
    }),
    /not in trust domain cluster.local/,
  );
});

test('a TTL above the maximum is refused', async () => {
  await assert.rejects(
    ca.sign({ csrPem: await csrFor(ID), identity: ID, ttlSeconds: 8 * 86400 }),
    (err: unknown) => {
      assert.ok(err instanceof CaRequestError);
      assert.equal(err.kind, 'invalid');
      assert.match(err.message, /above the maximum of 604800s/);
      return true;
    },
  );
});

test('a garbage CSR is refused as invalid', async () => {
  await assert.rejects(ca.sign({ csrPem: 'not a csr', identity: ID }), (err: unknown) => {
    assert.ok(err instanceof CaRequestError && err.kind === 'invalid');
    return true;
  });
});

test('RSA 2048 roots are selectable', async () => {
  const rsaDir = mkdtempSync(join(tmpdir(), 'portolan-ca-rsa-'));
  const rsaStore = Store.open({ dataDir: rsaDir, logger: silentLogger });
  try {
    const rsa = await CertificateAuthority.open({
      material: rsaStore.ca,
      trustDomain: 'cluster.local',
      keyAlgorithm: 'rsa-2048',
    });
    const root = new X509Certificate(rsa.trustBundle());
    assert.equal(root.publicKey.asymmetricKeyType, 'rsa');
    assert.equal(root.publicKey.asymmetricKeyDetails?.modulusLength, 2048);
    const { chain } = await rsa.sign({ csrPem: await csrFor(ID), identity: ID });
    assert.match(opensslVerify(chain[1] ?? '', chain), /OK/);
  } finally {
    rsaStore.close();
    rmSync(rsaDir, { recursive: true, force: true });
  }
});

test('an encrypted root key needs the passphrase; a wrong one is a clear error', async () => {
  const encDir = mkdtempSync(join(tmpdir(), 'portolan-ca-enc-'));
  const encStore = Store.open({ dataDir: encDir, logger: silentLogger });
  try {
    await CertificateAuthority.open({
      material: encStore.ca,
      trustDomain: 'cluster.local',
      passphrase: 's3cret',
    });
    const raw = encStore.ca.get('roots')?.toString('utf8') ?? '';
    assert.doesNotMatch(raw, /PRIVATE KEY/);
    await assert.rejects(
      CertificateAuthority.open({ material: encStore.ca, trustDomain: 'cluster.local' }),
      /encrypted: set PORTOLAN_CA_KEY_PASSPHRASE/,
    );
    await assert.rejects(
      CertificateAuthority.open({ material: encStore.ca, trustDomain: 'cluster.local', passphrase: 'nope' }),
      /cannot decrypt/,
    );
    const ok = await CertificateAuthority.open({
      material: encStore.ca,
      trustDomain: 'cluster.local',
      passphrase: 's3cret',
    });
    await ok.sign({ csrPem: await csrFor(ID), identity: ID });
  } finally {
    encStore.close();
    rmSync(encDir, { recursive: true, force: true });
  }
});

/** An Istio-style cacerts directory: a root, and an intermediate that signs. */
async function writePluginDir(target: string): Promise<string> {
  const root = await createRoot('cluster.local', 'ec-p256');
  const interKeys = await generateKeyPair('ec-p256');
  const inter = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: 'O=cluster.local, CN=intermediate',
    issuer: root.cert.subjectName,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 365 * 86400_000),
    publicKey: interKeys.publicKey,
    signingKey: root.keys.privateKey,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(interKeys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(root.cert.publicKey),
    ],
  });
  writeFileSync(join(target, 'ca-cert.pem'), inter.toString('pem'));
  writeFileSync(join(target, 'ca-key.pem'), await privateKeyPem(interKeys.privateKey));
  writeFileSync(join(target, 'cert-chain.pem'), `${inter.toString('pem')}\n${root.cert.toString('pem')}`);
  writeFileSync(join(target, 'root-cert.pem'), root.cert.toString('pem'));
  return root.cert.toString('pem');
}

test('a plug-in CA in the cacerts layout signs leaves chained through its intermediate', async () => {
  const pluginDir = mkdtempSync(join(tmpdir(), 'portolan-cacerts-'));
  try {
    const rootPem = await writePluginDir(pluginDir);
    const plugin = await CertificateAuthority.open({
      material: store.ca,
      trustDomain: 'cluster.local',
      pluginDir,
    });
    assert.equal(plugin.trustBundle().trim(), rootPem.trim());
    const { chain } = await plugin.sign({ csrPem: await csrFor(ID), identity: ID });
    assert.equal(chain.length, 3, 'leaf, intermediate, root');
    assert.equal(chain[2]?.trim(), rootPem.trim());
    assert.match(opensslVerify(rootPem, chain), /leaf\.pem: OK/);
  } finally {
    rmSync(pluginDir, { recursive: true, force: true });
  }
});

test('a partial plug-in CA directory is refused at start, naming the missing files', async () => {
  const pluginDir = mkdtempSync(join(tmpdir(), 'portolan-cacerts-'));
  try {
    await writePluginDir(pluginDir);
    rmSync(join(pluginDir, 'ca-key.pem'));
    rmSync(join(pluginDir, 'cert-chain.pem'));
    await assert.rejects(
      CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local', pluginDir }),
      (err: unknown) => {
        assert.ok(err instanceof CaSetupError);
        assert.match(err.message, /missing ca-key\.pem, cert-chain\.pem/);
        return true;
      },
    );
  } finally {
    rmSync(pluginDir, { recursive: true, force: true });
  }
});

test('a plug-in CA whose key does not match its certificate is refused', async () => {
  const pluginDir = mkdtempSync(join(tmpdir(), 'portolan-cacerts-'));
  try {
    await writePluginDir(pluginDir);
    writeFileSync(
      join(pluginDir, 'ca-key.pem'),
      await privateKeyPem((await generateKeyPair('ec-p256')).privateKey),
    );
    await assert.rejects(
      CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local', pluginDir }),
      /ca-key\.pem is not the key of ca-cert\.pem/,
    );
  } finally {
    rmSync(pluginDir, { recursive: true, force: true });
  }
});

test('a leaf signed by a foreign root does not verify against ours (sanity for the openssl check)', async () => {
  const foreign = await createRoot('cluster.local', 'ec-p256');
  const leaf = await issueLeaf({
    issuer: foreign.cert,
    issuerKey: foreign.keys.privateKey,
    publicKey: await x509.PublicKey.create((await generateKeyPair('ec-p256')).publicKey),
    uris: [ID],
    notBefore: new Date(),
    notAfter: new Date(Date.now() + 3600_000),
    serial: randomSerial(),
  });
  assert.throws(() => opensslVerify(ca.trustBundle(), [leaf.toString('pem'), ca.trustBundle()]));
});
