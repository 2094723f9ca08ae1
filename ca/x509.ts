// The X.509 library, set up once: @peculiar/x509 (pure TypeScript over WebCrypto) needs
// reflect-metadata loaded before it and a crypto provider; Node's own WebCrypto is that provider.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

// The library's types name the DOM's Crypto; Node's webcrypto is the same API.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
export const subtle = webcrypto.subtle;
export type CryptoKey = webcrypto.CryptoKey;
export type CryptoKeyPair = webcrypto.CryptoKeyPair;
