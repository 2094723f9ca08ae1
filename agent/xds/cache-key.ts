// What the node cache is keyed by: the whole node a local client sent (completed with the agent's
// identity), not its id alone. The id is guessable (SA.HOSTNAME) and the config depends on the
// rest (labels, metadata), so a client reusing another's id with other labels must never be served
// the other's config, nor overwrite it: two nodes that differ in anything are two cache entries.
import { createHash } from 'node:crypto';
import type { NodeObject } from './messages.js';

const SEPARATOR = '#';
const FINGERPRINT_CHARS = 32;

/** `NODE_ID#FINGERPRINT`: the node id for people, a hash of the whole node for the match. */
export function cacheKey(nodeId: string, node: NodeObject): string {
  const fingerprint = createHash('sha256')
    .update(canonicalJson(node))
    .digest('hex')
    .slice(0, FINGERPRINT_CHARS);
  return `${nodeId}${SEPARATOR}${fingerprint}`;
}

/** The node id part of a cache key. */
export function nodeIdOfKey(key: string): string {
  const i = key.lastIndexOf(SEPARATOR);
  return i < 0 ? key : key.slice(0, i);
}

/** JSON with object keys sorted at every level: the same node gives the same text whatever its map order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || Buffer.isBuffer(v)) return v;
    if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}
