// What a certificate costs the CA and which keys it signs: a passphrase-protected root key is
// decrypted once (scrypt off the event loop), not at every signature; CSR keys outside RSA
// 2048–8192 and EC P-256/P-384 are refused; certificates live 24 h at most by default.
import assert from 'node:assert/strict';
import crypto, { type webcrypto } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { CaRequestError, CertificateAuthority } from '../../../ca/authority.js';
import { createCsr } from '../../../ca/certificates.js';
import { subtle } from '../../../ca/x509.js';
import { silentLogger } from '../../../log/logger.js';
import { Store } from '../../../store/store.js';

const ID = 'spiffe://cluster.local/ns/shop/sa/orders';

function openStore(t: TestContext): Store {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-ca-cost-'));
  const store = Store.open({ dataDir: dir, logger: silentLogger });
  t.after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return store;
}

test('a passphrase-protected root key is decrypted once, not at each signature', async (t) => {
  const store = openStore(t);
  const ca = await CertificateAuthority.open({
    material: store.ca,
    trustDomain: 'cluster.local',
    passphrase: 'pw',
  });
  const calls = { scrypt: 0, scryptSync: 0 };
  const real = { scrypt: crypto.scrypt, scryptSync: crypto.scryptSync };
  t.mock.method(crypto, 'scrypt', (...args: Parameters<typeof crypto.scrypt>) => {
    calls.scrypt += 1;
    return (real.scrypt as (...a: unknown[]) => void)(...args);
  });
  t.mock.method(crypto, 'scryptSync', (...args: Parameters<typeof crypto.scryptSync>) => {
    calls.scryptSync += 1;
    return real.scryptSync(...args);
  });
  syncBuiltinESMExports();
  t.after(() => {
    t.mock.restoreAll();
    syncBuiltinESMExports();
  });
  const keys = await subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const csrPem = await createCsr(keys, ID);
  for (let i = 0; i < 10; i++) await ca.sign({ csrPem, identity: ID });
  assert.deepEqual(calls, { scrypt: 0, scryptSync: 0 }, 'the key opened at start is kept');
  // A second CA over the same store opens the key once, off the event loop.
  const again = await CertificateAuthority.open({
    material: store.ca,
    trustDomain: 'cluster.local',
    passphrase: 'pw',
  });
  for (let i = 0; i < 5; i++) await again.sign({ csrPem, identity: ID });
  assert.deepEqual(calls, { scrypt: 1, scryptSync: 0 });
});

type KeyParams = webcrypto.EcKeyGenParams | webcrypto.RsaHashedKeyGenParams;

const KEYS: readonly { what: string; params: KeyParams; ok: boolean }[] = [
  { what: 'EC P-256', params: { name: 'ECDSA', namedCurve: 'P-256' }, ok: true },
  { what: 'EC P-384', params: { name: 'ECDSA', namedCurve: 'P-384' }, ok: true },
  { what: 'EC P-521', params: { name: 'ECDSA', namedCurve: 'P-521' }, ok: false },
  { what: 'RSA 1024', params: rsa(1024), ok: false },
  { what: 'RSA 2048', params: rsa(2048), ok: true },
];

function rsa(modulusLength: number): KeyParams {
  return {
    name: 'RSASSA-PKCS1-v1_5',
    modulusLength,
    publicExponent: new Uint8Array([1, 0, 1]),
    hash: 'SHA-256',
  };
}

test('CSR keys: RSA under 2048 bits and curves other than P-256/P-384 are refused as invalid', async (t) => {
  const store = openStore(t);
  const ca = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
  for (const { what, params, ok } of KEYS) {
    const keys = await subtle.generateKey(params, true, ['sign', 'verify']);
    const csrPem = await createCsr(keys, ID);
    if (ok) {
      const { cert } = await ca.sign({ csrPem, identity: ID });
      assert.ok(cert.serialNumber, what);
    } else {
      await assert.rejects(ca.sign({ csrPem, identity: ID }), (err: unknown) => {
        assert.ok(err instanceof CaRequestError && err.kind === 'invalid', what);
        assert.match(err.message, /RSA keys of 2048–8192 bits and EC keys on P-256 or P-384/);
        return true;
      });
    }
  }
});

test('the default maximum certificate lifetime is 24 h', async (t) => {
  const store = openStore(t);
  const ca = await CertificateAuthority.open({ material: store.ca, trustDomain: 'cluster.local' });
  assert.equal(ca.maxTtlSeconds, 24 * 3600);
});
