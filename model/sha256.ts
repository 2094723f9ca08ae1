// SHA-256 in one call. crypto.hash (Node 20.12 and later) hashes without building a Hash object per
// call, about half the cost for the small inputs hashed on every change (an encoded resource, a
// config file's text); older Node 20 releases take the Hash object.
import * as crypto from 'node:crypto';

type Encoding = 'hex' | 'base64url';

const oneShot = (
  crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: Encoding) => string }
).hash;

export function sha256(data: string | Uint8Array, encoding: Encoding): string {
  if (oneShot) return oneShot('sha256', data, encoding);
  return crypto.createHash('sha256').update(data).digest(encoding);
}
