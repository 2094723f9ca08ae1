// Which workload keys the CA signs: RSA of 2048 to 8192 bits, or ECDSA on P-256 or P-384 — what
// Envoy, gRPC and Istio's own CA accept. Weaker keys are refused, and so are huge RSA keys (whose
// signature checks would let one CSR buy seconds of CPU) and curves outside the two.
import { createPublicKey } from 'node:crypto';

const CURVES: Readonly<Record<string, string>> = { prime256v1: 'P-256', secp384r1: 'P-384' };
const RSA_MIN_BITS = 2048;
const RSA_MAX_BITS = 8192;

/** Why the CSR's public key (DER SubjectPublicKeyInfo) is refused, or undefined when it is fine. */
export function checkWorkloadKey(spki: ArrayBuffer): string | undefined {
  let key;
  try {
    key = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
  } catch (err) {
    return `csr public key cannot be read: ${(err as Error).message}`;
  }
  const accepted = `the CA signs RSA keys of ${RSA_MIN_BITS}–${RSA_MAX_BITS} bits and EC keys on P-256 or P-384`;
  if (key.asymmetricKeyType === 'rsa') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS) return `csr key is RSA ${bits} bits: ${accepted}`;
    return undefined;
  }
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve ?? '?';
    return CURVES[curve] ? undefined : `csr key is EC on curve ${curve}: ${accepted}`;
  }
  return `csr key is ${key.asymmetricKeyType ?? 'of an unknown type'}: ${accepted}`;
}
