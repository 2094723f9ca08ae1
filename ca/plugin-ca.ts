// A plug-in CA from a directory in Istio's `cacerts` layout: ca-cert.pem (the signing certificate),
// ca-key.pem (its key), cert-chain.pem (ca-cert up to the root) and root-cert.pem. All four or none.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { importSigningKey } from './keys.js';
import { subtle, x509, type CryptoKeyPair } from './x509.js';

export const PLUGIN_FILES = ['ca-cert.pem', 'ca-key.pem', 'cert-chain.pem', 'root-cert.pem'] as const;

export class CaSetupError extends Error {}

export interface PluginCa {
  readonly signingCert: x509.X509Certificate;
  readonly signingKeys: CryptoKeyPair;
  /** From the signing certificate up to and including the root. */
  readonly chain: readonly x509.X509Certificate[];
  readonly roots: readonly x509.X509Certificate[];
}

export async function loadPluginCa(dir: string, now = new Date()): Promise<PluginCa> {
  const present = PLUGIN_FILES.filter((f) => existsSync(join(dir, f)));
  if (present.length !== PLUGIN_FILES.length) {
    const missing = PLUGIN_FILES.filter((f) => !present.includes(f));
    throw new CaSetupError(
      `--ca-dir ${dir}: a plug-in CA needs all of ${PLUGIN_FILES.join(', ')}; missing ${missing.join(', ')}`,
    );
  }
  const read = (f: string): string => readFileSync(join(dir, f), 'utf8');
  const parse = (f: string): x509.X509Certificate[] => {
    try {
      const certs = splitPem(read(f)).map((pem) => new x509.X509Certificate(pem));
      if (certs.length === 0) throw new Error('no certificate');
      return certs;
    } catch (err) {
      throw new CaSetupError(`--ca-dir ${dir}/${f}: not a PEM certificate file (${(err as Error).message})`);
    }
  };
  const [signingCert] = parse('ca-cert.pem');
  const roots = parse('root-cert.pem');
  const chainFile = parse('cert-chain.pem');
  if (!signingCert) throw new CaSetupError(`--ca-dir ${dir}/ca-cert.pem: empty`);
  let signingKeys: CryptoKeyPair;
  try {
    signingKeys = await importSigningKey(read('ca-key.pem'));
  } catch (err) {
    throw new CaSetupError(`--ca-dir ${dir}/ca-key.pem: ${(err as Error).message}`);
  }
  const certSpki = Buffer.from(signingCert.publicKey.rawData);
  const keySpki = Buffer.from(await subtle.exportKey('spki', signingKeys.publicKey));
  if (!certSpki.equals(keySpki))
    throw new CaSetupError(`--ca-dir ${dir}: ca-key.pem is not the key of ca-cert.pem`);
  // Istio's cert-chain.pem usually starts with ca-cert itself; accept it with or without.
  const chain = chainFile[0]?.equal(signingCert) ? [...chainFile] : [signingCert, ...chainFile];
  const last = chain[chain.length - 1];
  if (last && !roots.some((r) => r.equal(last))) {
    const root = await issuerAmong(last, roots);
    if (!root) throw new CaSetupError(`--ca-dir ${dir}: cert-chain.pem does not lead to root-cert.pem`);
    chain.push(root);
  }
  for (let i = 0; i + 1 < chain.length; i++) {
    const child = chain[i];
    const parent = chain[i + 1];
    if (!child || !parent || !(await child.verify({ publicKey: parent.publicKey, signatureOnly: true })))
      throw new CaSetupError(
        `--ca-dir ${dir}: cert-chain.pem is not a chain (certificate ${i} is not signed by ${i + 1})`,
      );
  }
  if (signingCert.notAfter <= now) throw new CaSetupError(`--ca-dir ${dir}/ca-cert.pem: expired`);
  return { signingCert, signingKeys, chain, roots };
}

async function issuerAmong(
  cert: x509.X509Certificate,
  candidates: readonly x509.X509Certificate[],
): Promise<x509.X509Certificate | undefined> {
  for (const c of candidates) {
    if (await cert.verify({ publicKey: c.publicKey, signatureOnly: true })) return c;
  }
  return undefined;
}

/** The PEM certificate blocks of a file, in order. */
export function splitPem(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}
