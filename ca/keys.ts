// Key pairs for CA and workload certificates: generation, PEM export, and import of a PEM private
// key (ours or a plug-in CA's) as a WebCrypto signing key.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import type { webcrypto } from 'node:crypto';
import { subtle, x509, type CryptoKey, type CryptoKeyPair } from './x509.js';

export type KeyAlgorithm = 'ec-p256' | 'rsa-2048';

export const KEY_ALGORITHMS: readonly KeyAlgorithm[] = ['ec-p256', 'rsa-2048'];

const EC_P256: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };
const RSA_2048: webcrypto.RsaHashedKeyGenParams = {
  name: 'RSASSA-PKCS1-v1_5',
  modulusLength: 2048,
  publicExponent: new Uint8Array([1, 0, 1]),
  hash: 'SHA-256',
};

export async function generateKeyPair(algorithm: KeyAlgorithm): Promise<CryptoKeyPair> {
  const params = algorithm === 'ec-p256' ? EC_P256 : RSA_2048;
  return await subtle.generateKey(params, true, ['sign', 'verify']);
}

export async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = await subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** The signature algorithm that goes with a key: ECDSA with SHA-256/384, or RSA PKCS#1 v1.5 SHA-256. */
export function signingAlgorithm(key: CryptoKey): webcrypto.Algorithm | webcrypto.EcdsaParams {
  if (key.algorithm.name === 'ECDSA') {
    const curve = (key.algorithm as webcrypto.EcKeyAlgorithm).namedCurve;
    return { name: 'ECDSA', hash: curve === 'P-384' ? 'SHA-384' : 'SHA-256' };
  }
  return { name: 'RSASSA-PKCS1-v1_5' };
}

/** Imports a PEM private key (PKCS#8, SEC1 or PKCS#1) for signing; the algorithm is read from the key. */
export async function importSigningKey(pem: string): Promise<CryptoKeyPair> {
  const keyObject = createPrivateKey(pem);
  const pkcs8 = keyObject.export({ format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(keyObject).export({ format: 'der', type: 'spki' });
  let params: webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams;
  if (keyObject.asymmetricKeyType === 'ec') {
    const curve = keyObject.asymmetricKeyDetails?.namedCurve;
    const namedCurve = curve === 'prime256v1' ? 'P-256' : curve === 'secp384r1' ? 'P-384' : undefined;
    if (!namedCurve) throw new Error(`unsupported EC curve ${curve ?? '?'} (P-256 or P-384)`);
    params = { name: 'ECDSA', namedCurve };
  } else if (keyObject.asymmetricKeyType === 'rsa') {
    params = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  } else {
    throw new Error(`unsupported key type ${keyObject.asymmetricKeyType ?? '?'} (EC or RSA)`);
  }
  const privateKey = await subtle.importKey('pkcs8', pkcs8, params, true, ['sign']);
  const publicKey = await subtle.importKey('spki', spki, params, true, ['verify']);
  return { privateKey, publicKey };
}
