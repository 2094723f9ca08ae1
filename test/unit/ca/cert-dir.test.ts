// The workload certificate directory (ca/cert-dir.ts): the pair changes in one step. A crash after
// any step of a rewrite leaves the old pair or the new one — never a key with another certificate —
// both behind `..data` and in the files Envoy and gRPC read once repaired; a directory of the old
// layout with a mismatched pair (issue #17 item 8: the key renamed in, then a crash) is reported as
// unusable, so the agent falls back to its join token, and the next write converts it.
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import {
  DATA_LINK,
  readCertDir,
  repairCertDir,
  writeCertDir,
  writeSteps,
  type WorkloadFiles,
} from '../../../ca/cert-dir.js';
import { createRoot, issueLeaf, randomSerial } from '../../../ca/certificates.js';
import { generateKeyPair, privateKeyPem } from '../../../ca/keys.js';
import { x509 } from '../../../ca/x509.js';
import { CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE } from '../../../mesh/workload-certs.js';

const ID = 'spiffe://cluster.local/ns/shop/sa/orders';
let dir: string;
let pairA: WorkloadFiles;
let pairB: WorkloadFiles;

async function pair(root: Awaited<ReturnType<typeof createRoot>>): Promise<WorkloadFiles> {
  const keys = await generateKeyPair('ec-p256');
  const now = Date.now();
  const leaf = await issueLeaf({
    issuer: root.cert,
    issuerKey: root.keys.privateKey,
    publicKey: await x509.PublicKey.create(keys.publicKey),
    uris: [ID],
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 3600_000),
    serial: randomSerial(),
  });
  return {
    chainPem: leaf.toString('pem'),
    keyPem: await privateKeyPem(keys.privateKey),
    bundlePem: root.cert.toString('pem'),
  };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-certdir-'));
  const root = await createRoot('cluster.local', 'ec-p256');
  pairA = await pair(root);
  pairB = await pair(root);
});

after(() => rmSync(dir, { recursive: true, force: true }));

const serialOf = (chainPem: string): string => new X509Certificate(chainPem).serialNumber;

/** The files under their top-level names, as Envoy and gRPC read them: a matching pair, or a reason. */
function topLevelPair(d: string): string {
  const chain = readFileSync(join(d, CERT_CHAIN_FILE), 'utf8');
  const key = readFileSync(join(d, KEY_FILE), 'utf8');
  assert.ok(new X509Certificate(chain).checkPrivateKey(createPrivateKey(key)), 'the top-level pair matches');
  return serialOf(chain);
}

test('a written directory: every file a link into ..data, the key 0600, read back as held', () => {
  const d = join(dir, 'fresh');
  writeCertDir(d, pairA);
  for (const f of [CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE]) {
    assert.ok(lstatSync(join(d, f)).isSymbolicLink(), `${f} is a link`);
  }
  assert.ok(lstatSync(join(d, DATA_LINK)).isSymbolicLink());
  assert.equal(statSync(join(d, KEY_FILE)).mode & 0o777, 0o600);
  const state = readCertDir(d);
  assert.equal(state.kind, 'held');
  if (state.kind === 'held') {
    assert.equal(state.cert.identity, ID);
    assert.equal(state.cert.serial, serialOf(pairA.chainPem));
    assert.equal(state.cert.bundlePem.trim(), pairA.bundlePem.trim());
  }
  assert.equal(topLevelPair(d), serialOf(pairA.chainPem));
  assert.equal(readCertDir(join(dir, 'missing')).kind, 'empty');
});

test('a crash after any step of a rewrite leaves the old pair or the new one, and repair completes it', () => {
  const steps = writeSteps(join(dir, 'probe'), pairB).length;
  assert.ok(steps >= 6);
  const seen = new Set<string>();
  for (let crashAfter = 0; crashAfter <= steps; crashAfter++) {
    const d = join(dir, `crash-${crashAfter}`);
    writeCertDir(d, pairA);
    for (const step of writeSteps(d, pairB).slice(0, crashAfter)) step.run();
    // What a restarted agent reads: a whole pair.
    const state = readCertDir(d);
    assert.equal(
      state.kind,
      'held',
      `after ${crashAfter} steps: ${state.kind === 'unusable' ? state.reason : ''}`,
    );
    const serial = state.kind === 'held' ? state.cert.serial : '';
    assert.ok([serialOf(pairA.chainPem), serialOf(pairB.chainPem)].includes(serial));
    seen.add(serial === serialOf(pairA.chainPem) ? 'old' : 'new');
    // What Envoy and gRPC read, once the agent has repaired the directory: the same whole pair.
    repairCertDir(d);
    assert.equal(topLevelPair(d), serial, `after ${crashAfter} steps the files match what ..data names`);
    const versions = readdirSync(d).filter((n) => n.startsWith('..v-'));
    assert.equal(versions.length, 1, `repair leaves one version (after ${crashAfter} steps)`);
  }
  assert.deepEqual([...seen].sort(), ['new', 'old'], 'both outcomes occur');
});

test('the old layout with a mismatched pair is unusable (saying why); the next write converts it', () => {
  const d = join(dir, 'legacy');
  mkdirSync(d);
  // What `portolan cert` used to leave after a crash between its two renames: B's key, A's certificate.
  writeFileSync(join(d, KEY_FILE), pairB.keyPem, { mode: 0o600 });
  writeFileSync(join(d, CERT_CHAIN_FILE), pairA.chainPem);
  writeFileSync(join(d, ROOT_CERT_FILE), pairA.bundlePem);
  const state = readCertDir(d);
  assert.deepEqual(state, {
    kind: 'unusable',
    reason: 'key.pem is not the key of cert-chain.pem (mismatched pair)',
  });
  // A matching pair in the old layout is still read (a VM upgraded from an older portolan cert).
  writeFileSync(join(d, KEY_FILE), pairA.keyPem, { mode: 0o600 });
  assert.equal(readCertDir(d).kind, 'held');
  writeCertDir(d, pairB);
  assert.ok(lstatSync(join(d, CERT_CHAIN_FILE)).isSymbolicLink(), 'converted to links');
  assert.equal(topLevelPair(d), serialOf(pairB.chainPem));
});

test('unreadable pairs are unusable with a reason: a dangling ..data, a key that is not a key', () => {
  const dangling = join(dir, 'dangling');
  mkdirSync(dangling);
  symlinkSync('..v-gone', join(dangling, DATA_LINK));
  const a = readCertDir(dangling);
  assert.equal(a.kind, 'unusable');
  assert.match(a.kind === 'unusable' ? a.reason : '', /cannot read the certificate pair: ENOENT/);

  const garbage = join(dir, 'garbage');
  writeCertDir(garbage, pairA);
  const keyFile = join(garbage, KEY_FILE);
  chmodSync(keyFile, 0o600);
  writeFileSync(keyFile, 'not a key\n');
  const b = readCertDir(garbage);
  assert.equal(b.kind, 'unusable');
  assert.match(b.kind === 'unusable' ? b.reason : '', /^key\.pem is not a private key/);
});
