// A generated xDS resource, encoded once: the bytes of its google.protobuf.Any payload are what every
// stream that receives it sends, and the hash of those bytes is its version.
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

/**
 * Encodes `message`, already in protobufjs's wire form (enums as numbers, wrappers as `{ value }`,
 * no Anys to pack), as the resource `name` of `typeUrl`: `encodeResource` without `fromObject`, whose
 * copy of every nested message is most of an encode for the resource rebuilt on each endpoint change
 * (EDS). The bytes are the same as encodeResource's for the same message.
 */
export function encodeWireForm(typeUrl: string, name: string, message: object): EncodedResource {
  const type = messageType(typeUrl.slice(TYPE_URL_PREFIX.length));
  const value = Buffer.from(type.encode(message).finish());
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
  // One text hashed in one call (model/sha256.ts): the digest is the same as feeding each part to a
  // Hash object, without building one per response.
  const sorted =
    resources.length < 2
      ? resources
      : [...resources].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let text = '';
  for (const r of sorted) text += `${r.name}\0${r.version}\0`;
  return sha256(text, 'base64url').slice(0, 16);
}
