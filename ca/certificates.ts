// Building certificates and CSRs: self-signed roots, workload leaves with a SPIFFE URI SAN, and the
// server certificate of the secure xDS port.
import { randomBytes } from 'node:crypto';
import { generateKeyPair, signingAlgorithm, type KeyAlgorithm } from './keys.js';
import { x509, type CryptoKey, type CryptoKeyPair } from './x509.js';

const DAY_MS = 24 * 3600 * 1000;

/** A random positive 128-bit serial number, as hex. */
export function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  if (bytes[0] === 0) bytes[0] = 1; // keep it 16 bytes long and positive
  return bytes.toString('hex');
}

export interface RootMaterial {
  readonly cert: x509.X509Certificate;
  readonly keys: CryptoKeyPair;
}

export async function createRoot(
  trustDomain: string,
  algorithm: KeyAlgorithm,
  lifetimeDays = 3650,
  now = new Date(),
): Promise<RootMaterial> {
  const keys = await generateKeyPair(algorithm);
  const serialNumber = randomSerial();
  // Two roots coexist during a rotation: distinct subjects keep chain building unambiguous.
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber,
    name: `O=${trustDomain}, CN=Portolan root CA ${now.toISOString().slice(0, 10)} ${serialNumber.slice(0, 8)}`,
    notBefore: new Date(now.getTime() - 3600_000),
    notAfter: new Date(now.getTime() + lifetimeDays * DAY_MS),
    keys,
    signingAlgorithm: signingAlgorithm(keys.privateKey),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys };
}

export interface LeafRequest {
  readonly issuer: x509.X509Certificate;
  readonly issuerKey: CryptoKey;
  readonly publicKey: x509.PublicKey;
  readonly uris?: readonly string[];
  readonly dnsNames?: readonly string[];
  readonly ips?: readonly string[];
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly serial: string;
}

/** A leaf usable for both TLS client and server auth; SANs only, empty subject (as SPIFFE X.509-SVIDs). */
export async function issueLeaf(req: LeafRequest): Promise<x509.X509Certificate> {
  const names: x509.JsonGeneralName[] = [
    ...(req.uris ?? []).map((value) => ({ type: 'url' as const, value })),
    ...(req.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(req.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  return x509.X509CertificateGenerator.create({
    serialNumber: req.serial,
    subject: '',
    issuer: req.issuer.subjectName,
    notBefore: req.notBefore,
    notAfter: req.notAfter,
    publicKey: req.publicKey,
    signingKey: req.issuerKey,
    signingAlgorithm: signingAlgorithm(req.issuerKey),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        x509.ExtendedKeyUsage.clientAuth,
      ]),
      // Critical because the subject is empty (RFC 5280 4.2.1.6).
      new x509.SubjectAlternativeNameExtension(names, true),
      await x509.AuthorityKeyIdentifierExtension.create(req.issuer.publicKey),
    ],
  });
}

/** A PKCS#10 request carrying only the workload's SPIFFE URI. */
export async function createCsr(keys: CryptoKeyPair, uri: string): Promise<string> {
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    keys,
    signingAlgorithm: signingAlgorithm(keys.privateKey),
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'url', value: uri }], true)],
  });
  return csr.toString('pem');
}

/** Every SAN of a CSR or certificate, as "type:value" strings (e.g. "url:spiffe://…"). */
export function sanEntries(extensions: readonly x509.Extension[]): string[] {
  const san = extensions.find((e) => e instanceof x509.SubjectAlternativeNameExtension);
  if (!(san instanceof x509.SubjectAlternativeNameExtension)) return [];
  return san.names.items.map((n) => `${n.type}:${n.value}`);
}
