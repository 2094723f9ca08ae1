// A generated xDS resource, encoded once: the bytes of its google.protobuf.Any payload are what every
// stream that receives it sends, and the hash of those bytes is its version.
import { createHash } from 'node:crypto';
import { sha256 } from '../../model/sha256.js';
import { messageType } from './protos.js';
import { TYPE_URL_PREFIX } from './type-urls.js';

export interface EncodedResource {
  readonly name: string;
  readonly typeUrl: string;
  /** Serialized message (the `value` of its Any). */
  readonly value: Buffer;
  /** Content hash of `value`: equal bytes, equal version. */
  readonly version: string;
}

/**
 * Encodes `message` (an Envoy proto in snake_case object form) as the resource `name` of `typeUrl`.
 * `fromObject` turns enum names, nested Anys and wrappers into the proto form.
 */
export function encodeResource(typeUrl: string, name: string, message: object): EncodedResource {
  const type = messageType(typeUrl.slice(TYPE_URL_PREFIX.length));
  const value = Buffer.from(type.encode(type.fromObject(message)).finish());
  return { name, typeUrl, value, version: hashBytes(value) };
}

/** Packs a message into the `{type_url, value}` form of google.protobuf.Any, for embedding in another. */
export function toAny(typeUrl: string, message: object): { type_url: string; value: Buffer } {
  const type = messageType(typeUrl.slice(TYPE_URL_PREFIX.length));
  return { type_url: typeUrl, value: Buffer.from(type.encode(type.fromObject(message)).finish()) };
}

export function hashBytes(value: Uint8Array): string {
  return sha256(value, 'base64url').slice(0, 16);
}

/** Version of a set of resources: a hash over their names and versions, independent of order. */
export function versionOf(resources: readonly EncodedResource[]): string {
  const h = createHash('sha256');
  for (const r of [...resources].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    h.update(r.name).update('\0').update(r.version).update('\0');
  }
  return h.digest('base64url').slice(0, 16);
}
