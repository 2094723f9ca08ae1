// A subscription as a response-cache key: the wildcard flag and the sorted names. Long ones are
// hashed, so a stream subscribed to 10,000 names keeps 45 bytes as its key, not half a megabyte.
import { createHash } from 'node:crypto';

/** Keys up to this length are kept as they are (readable, and no hashing for the usual few names). */
const PLAIN_MAX = 256;

export function subscriptionKey(wildcard: boolean, names: Iterable<string>): string {
  const joined = `${wildcard ? '*' : '-'}\0${[...names].sort().join('\0')}`;
  // '#' cannot start a plain key ('*' or '-'), so a hash never equals one.
  return joined.length <= PLAIN_MAX ? joined : `#${createHash('sha256').update(joined).digest('base64')}`;
}
