// The CA's private keys at rest in the store (itself 0600): plain PEM, or — when the operator sets
// PORTOLAN_CA_KEY_PASSPHRASE — AES-256-GCM under a key derived from it with scrypt. scrypt is slow on
// purpose (tens of milliseconds): the CA opens each root's key once (ca/root-store.ts keeps it), and
// `openKeyAsync` runs it on libuv's thread pool, off the event loop.
import { createCipheriv, createDecipheriv, randomBytes, scrypt, scryptSync } from 'node:crypto';

function scryptAsync(password: string, salt: Buffer, keylen: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, keylen, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export const PASSPHRASE_ENV = 'PORTOLAN_CA_KEY_PASSPHRASE';

interface SealedKey {
  readonly sealed: 'aes-256-gcm/scrypt';
  readonly salt: string;
  readonly iv: string;
  readonly tag: string;
  readonly data: string;
}

export class KeyProtectionError extends Error {}

export function sealKey(pem: string, passphrase: string | undefined): string {
  if (!passphrase) return pem;
  const salt = randomBytes(16);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', scryptSync(passphrase, salt, 32), iv);
  const data = Buffer.concat([cipher.update(pem, 'utf8'), cipher.final()]);
  const sealed: SealedKey = {
    sealed: 'aes-256-gcm/scrypt',
    salt: salt.toString('base64'),
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  };
  return JSON.stringify(sealed);
}

export function openKey(stored: string, passphrase: string | undefined): string {
  const sealed = parseSealed(stored, passphrase);
  if (!sealed) return stored;
  return decrypt(sealed, () => scryptSync(passphrase ?? '', Buffer.from(sealed.salt, 'base64'), 32));
}

/** openKey with the key derivation off the event loop. */
export async function openKeyAsync(stored: string, passphrase: string | undefined): Promise<string> {
  const sealed = parseSealed(stored, passphrase);
  if (!sealed) return stored;
  const key = await scryptAsync(passphrase ?? '', Buffer.from(sealed.salt, 'base64'), 32);
  return decrypt(sealed, () => key);
}

/** The sealed form of a stored key, or undefined when it is plain PEM. */
function parseSealed(stored: string, passphrase: string | undefined): SealedKey | undefined {
  if (!stored.startsWith('{')) return undefined;
  const sealed = JSON.parse(stored) as SealedKey;
  if (!passphrase)
    throw new KeyProtectionError(`the CA key in the store is encrypted: set ${PASSPHRASE_ENV}`);
  return sealed;
}

function decrypt(sealed: SealedKey, deriveKey: () => Buffer): string {
  try {
    const decipher = createDecipheriv('aes-256-gcm', deriveKey(), Buffer.from(sealed.iv, 'base64'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString(
      'utf8',
    );
  } catch {
    throw new KeyProtectionError(`cannot decrypt the CA key: wrong ${PASSPHRASE_ENV}?`);
  }
}
