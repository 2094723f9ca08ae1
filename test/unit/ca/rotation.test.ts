// Root rotation on a clock the test controls: the new root joins the bundle at once, signs after the
// overlap, and the old root leaves the bundle when everything it signed has expired. The CA's version
// (what the secure port watches) changes at each of the three steps.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CertificateAuthority } from '../../../ca/authority.js';
import { createCsr } from '../../../ca/certificates.js';
import { generateKeyPair } from '../../../ca/keys.js';
import { RootStore } from '../../../ca/root-store.js';
import { silentLogger } from '../../../log/logger.js';
import { Store } from '../../../store/store.js';

const ID = 'spiffe://cluster.local/ns/shop/sa/orders';
const HOUR = 3600_000;
let dir: string;
let store: Store;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-ca-rotation-'));
  store = Store.open({ dataDir: dir, logger: silentLogger });
});

after(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function leafAt(ca: CertificateAuthority, at: Date): Promise<X509Certificate> {
  const csrPem = await createCsr(await generateKeyPair('ec-p256'), ID);
  const { cert } = await ca.sign({ csrPem, identity: ID, ttlSeconds: 3600 }, at);
  return new X509Certificate(cert.toString('pem'));
}

function roots(ca: CertificateAuthority, at: Date): X509Certificate[] {
  return ca.trustedRoots(at).map((c) => new X509Certificate(c.toString('pem')));
}

function signedBy(leaf: X509Certificate, root: X509Certificate): boolean {
  return leaf.checkIssued(root) && leaf.verify(root.publicKey);
}

test('rotate: bundle of two at once, the new root signs after the overlap, the old one retires after max TTL', async () => {
  const t0 = new Date();
  const ca = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
  const [rootA] = roots(ca, t0);
  assert.ok(rootA);
  const before = ca.version(t0);

  await new RootStore(store.ca, undefined).rotate('cluster.local', 'ec-p256', 1 * HOUR, 2 * HOUR, t0);

  // Overlap: both roots trusted, the old one still signs.
  const during = new Date(t0.getTime() + 0.5 * HOUR);
  const bundle = roots(ca, during);
  assert.equal(bundle.length, 2);
  const rootB = bundle.find((r) => r.fingerprint256 !== rootA.fingerprint256);
  assert.ok(rootB, 'the new root is in the bundle');
  assert.notEqual(rootB.subject, rootA.subject, 'distinct subjects keep chain building unambiguous');
  assert.ok(signedBy(await leafAt(ca, during), rootA));
  const rotated = ca.version(during);
  assert.notEqual(rotated, before);

  // Switch: the new root signs; the old one is still trusted (its leaves are still valid).
  const switched = new Date(t0.getTime() + 1 * HOUR + 1000);
  const fromB = await leafAt(ca, switched);
  assert.ok(signedBy(fromB, rootB));
  assert.equal(roots(ca, switched).length, 2);
  assert.notEqual(ca.version(switched), rotated, 'the switch is a change the secure port notices');

  // Both leaves verify with openssl against the two-root bundle a workload gets during the overlap.
  const bundleFile = join(dir, 'bundle.pem');
  writeFileSync(bundleFile, ca.trustBundle(switched));
  for (const leaf of [await leafAt(ca, during), fromB]) {
    const leafFile = join(dir, 'leaf.pem');
    writeFileSync(leafFile, leaf.toString());
    const attime = String(Math.floor(switched.getTime() / 1000));
    const out = execFileSync(
      'openssl',
      ['verify', '-attime', attime, '-purpose', 'sslclient', '-CAfile', bundleFile, leafFile],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    assert.match(out, /OK/);
  }

  // Retirement: overlap + max TTL after the rotation the old root leaves the bundle.
  const retired = new Date(t0.getTime() + 3 * HOUR + 1000);
  assert.deepEqual(
    roots(ca, retired).map((r) => r.fingerprint256),
    [rootB.fingerprint256],
  );
  assert.notEqual(ca.version(retired), ca.version(switched), 'the retirement is a change too');
  assert.ok(signedBy(await leafAt(ca, retired), rootB));
});

test('a rotation with no root yet is refused', async () => {
  const other = mkdtempSync(join(tmpdir(), 'portolan-ca-rotation-empty-'));
  const empty = Store.open({ dataDir: other, logger: silentLogger });
  try {
    await assert.rejects(
      new RootStore(empty.ca, undefined).rotate('cluster.local', 'ec-p256', HOUR, HOUR),
      /no root to rotate/,
    );
  } finally {
    empty.close();
    rmSync(other, { recursive: true, force: true });
  }
});
