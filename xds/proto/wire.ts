// The ADS messages on the wire: DiscoveryRequest decoding (with node metadata as plain JSON) and
// DiscoveryResponse encoding around already-encoded resources.
import type protobuf from 'protobufjs';
import { messageType, TO_OBJECT } from './protos.js';
import type { NodeInfo } from '../proxy/proxy.js';
import type { EncodedResource } from './resource.js';

export interface DiscoveryRequest {
  readonly versionInfo: string;
  readonly node?: NodeInfo;
  readonly resourceNames: readonly string[];
  readonly typeUrl: string;
  readonly responseNonce: string;
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

export interface DiscoveryResponse {
  readonly versionInfo: string;
  readonly resources: readonly EncodedResource[];
  readonly typeUrl: string;
  readonly nonce: string;
}

let requestType: protobuf.Type | undefined;
let responseType: protobuf.Type | undefined;

const CONTROL_PLANE = { identifier: `portolan` };

export function decodeDiscoveryRequest(bytes: Buffer): DiscoveryRequest {
  requestType ??= messageType('envoy.service.discovery.v3.DiscoveryRequest');
  const raw = requestType.toObject(requestType.decode(bytes), { ...TO_OBJECT, arrays: true }) as RawRequest;
  const status = raw.error_detail;
  // One shape for every request (absent fields undefined): conditional spreads made each
  // combination its own (dictionary-mode) object, and every later read of it slow.
  return {
    versionInfo: raw.version_info ?? '',
    node: raw.node && toNodeInfo(raw.node),
    resourceNames: raw.resource_names ?? [],
    typeUrl: raw.type_url ?? '',
    responseNonce: raw.response_nonce ?? '',
    errorDetail: status && { code: status.code ?? 0, message: status.message ?? '' },
  };
}

export function encodeDiscoveryResponse(res: DiscoveryResponse): Buffer {
  responseType ??= messageType('envoy.service.discovery.v3.DiscoveryResponse');
  const message = {
    version_info: res.versionInfo,
    resources: res.resources.map((r) => ({ type_url: r.typeUrl, value: r.value })),
    type_url: res.typeUrl,
    nonce: res.nonce,
    control_plane: CONTROL_PLANE,
  };
  return Buffer.from(responseType.encode(message).finish());
}

/**
 * A response without its nonce, for sharing: every stream that sends the same resources sends the
 * same body, followed by its own nonce (protobuf fields may come in any order; decoders merge them).
 */
export function encodeResponseBody(res: Omit<DiscoveryResponse, 'nonce'>): Buffer {
  return encodeDiscoveryResponse({ ...res, nonce: '' });
}

/**
 * The nonce as protobuf field `field` (DiscoveryResponse.nonce is 5): sent after a shared body, so
 * every stream's response is `body` + its own few bytes and the body itself is never copied.
 */
export function nonceField(nonce: string, field = 5): Buffer {
  const out = Buffer.allocUnsafe(nonceFieldLength(nonce));
  writeNonceField(out, 0, nonce, field);
  return out;
}

/** The bytes nonceField(nonce) takes. */
export function nonceFieldLength(nonce: string): number {
  const length = utf8Length(nonce);
  let varintLength = 1;
  for (let n = length; n >= 0x80; n >>>= 7) varintLength += 1;
  return 1 + varintLength + length;
}

/**
 * Writes nonceField(nonce, field) into `out` at `at` (which has room: nonceFieldLength); returns
 * where it ends. A response frame is built in place this way, with no buffer of its own for the
 * nonce.
 */
export function writeNonceField(out: Buffer, at: number, nonce: string, field = 5): number {
  const length = utf8Length(nonce);
  let pos = at;
  out[pos++] = (field << 3) | 2;
  let n = length;
  while (n >= 0x80) {
    out[pos++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[pos++] = n;
  // Nonces are short and ASCII (a counter): copied here, without a call into C++ per response.
  if (length === nonce.length) for (let i = 0; i < length; i++) out[pos++] = nonce.charCodeAt(i);
  else pos += out.write(nonce, pos, 'utf8');
  return pos;
}

/** The UTF-8 length of `s`: its length when it is ASCII, as a nonce is. */
function utf8Length(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, 'utf8');
  return s.length;
}

/** `body` (from encodeResponseBody, or a DeltaDiscoveryResponse) followed by `nonce` as field `field`, in one buffer. */
export function appendNonce(body: Buffer, nonce: string, field = 5): Buffer {
  return Buffer.concat([body, nonceField(nonce, field)]);
}

/** For tests and tools that play the client: the inverse pair. */
export function encodeDiscoveryRequest(req: object): Buffer {
  requestType ??= messageType('envoy.service.discovery.v3.DiscoveryRequest');
  return Buffer.from(requestType.encode(requestType.fromObject(req)).finish());
}

export function decodeDiscoveryResponse(bytes: Buffer): {
  version_info: string;
  nonce: string;
  type_url: string;
  resources: { type_url: string; value: Buffer }[];
} {
  responseType ??= messageType('envoy.service.discovery.v3.DiscoveryResponse');
  const obj = responseType.toObject(responseType.decode(bytes), {
    longs: String,
    enums: String,
    arrays: true,
    defaults: true,
  });
  return obj as ReturnType<typeof decodeDiscoveryResponse>;
}

export interface DeltaDiscoveryRequest {
  readonly node?: NodeInfo;
  readonly typeUrl: string;
  readonly subscribe: readonly string[];
  readonly unsubscribe: readonly string[];
  /** The versions the client already holds, on the first request of a reconnected stream. */
  readonly initialVersions: ReadonlyMap<string, string>;
  readonly responseNonce: string;
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

export interface DeltaDiscoveryResponse {
  readonly systemVersion: string;
  readonly resources: readonly EncodedResource[];
  readonly removed: readonly string[];
  readonly typeUrl: string;
  readonly nonce: string;
}

let deltaRequestType: protobuf.Type | undefined;
let deltaResponseType: protobuf.Type | undefined;

export function decodeDeltaDiscoveryRequest(bytes: Buffer): DeltaDiscoveryRequest {
  deltaRequestType ??= messageType('envoy.service.discovery.v3.DeltaDiscoveryRequest');
  const raw = deltaRequestType.toObject(deltaRequestType.decode(bytes), {
    ...TO_OBJECT,
    arrays: true,
    objects: true,
  }) as RawDeltaRequest;
  const status = raw.error_detail;
  return {
    node: raw.node && toNodeInfo(raw.node),
    typeUrl: raw.type_url ?? '',
    subscribe: raw.resource_names_subscribe ?? [],
    unsubscribe: raw.resource_names_unsubscribe ?? [],
    initialVersions: new Map(Object.entries(raw.initial_resource_versions ?? {})),
    responseNonce: raw.response_nonce ?? '',
    errorDetail: status && { code: status.code ?? 0, message: status.message ?? '' },
  };
}

export function encodeDeltaDiscoveryResponse(res: DeltaDiscoveryResponse): Buffer {
  deltaResponseType ??= messageType('envoy.service.discovery.v3.DeltaDiscoveryResponse');
  const message = {
    system_version_info: res.systemVersion,
    resources: res.resources.map((r) => ({
      name: r.name,
      version: r.version,
      resource: { type_url: r.typeUrl, value: r.value },
    })),
    type_url: res.typeUrl,
    removed_resources: res.removed,
    nonce: res.nonce,
    control_plane: CONTROL_PLANE,
  };
  return Buffer.from(deltaResponseType.encode(message).finish());
}

/** For tests and tools that play a delta client. */
export function encodeDeltaDiscoveryRequest(req: object): Buffer {
  deltaRequestType ??= messageType('envoy.service.discovery.v3.DeltaDiscoveryRequest');
  return Buffer.from(deltaRequestType.encode(deltaRequestType.fromObject(req)).finish());
}

export function decodeDeltaDiscoveryResponse(bytes: Buffer): {
  system_version_info: string;
  nonce: string;
  type_url: string;
  resources: { name: string; version: string; resource: { type_url: string; value: Buffer } }[];
  removed_resources: string[];
} {
  deltaResponseType ??= messageType('envoy.service.discovery.v3.DeltaDiscoveryResponse');
  const obj = deltaResponseType.toObject(deltaResponseType.decode(bytes), {
    longs: String,
    enums: String,
    arrays: true,
    defaults: true,
  });
  return obj as ReturnType<typeof decodeDeltaDiscoveryResponse>;
}

interface RawDeltaRequest {
  node?: RawNode;
  type_url?: string;
  resource_names_subscribe?: string[];
  resource_names_unsubscribe?: string[];
  initial_resource_versions?: Record<string, string>;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string };
}

interface RawRequest {
  version_info?: string;
  node?: RawNode;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string };
}

/** A Node as protobufjs's toObject gives it (snake_case; Struct values as messages). */
export interface RawNode {
  id?: string;
  cluster?: string;
  user_agent_name?: string;
  user_agent_version?: string;
  metadata?: RawStruct;
  locality?: { region?: string; zone?: string; sub_zone?: string };
}

export interface RawStruct {
  fields?: Record<string, RawValue>;
}

export interface RawValue {
  null_value?: string;
  number_value?: number;
  string_value?: string;
  bool_value?: boolean;
  struct_value?: RawStruct;
  list_value?: { values?: RawValue[] };
}

/** The node as the server reads it: metadata as plain JSON (also for request-reader.ts's own node reader). */
export function toNodeInfo(node: RawNode): NodeInfo {
  // One shape for every node (absent fields undefined): spreads would give each combination its own.
  return {
    id: node.id,
    cluster: node.cluster,
    user_agent_name: node.user_agent_name,
    user_agent_version: node.user_agent_version,
    metadata: structToJson(node.metadata),
    locality: node.locality,
  };
}

function structToJson(struct: RawStruct | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(struct?.fields ?? {})) out[k] = valueToJson(v);
  return out;
}

// google.protobuf.Struct comes from protobufjs's built-in well-known types, whose field names are
// camelCase (stringValue) whatever keepCase says; accept both spellings.
function valueToJson(raw: RawValue): unknown {
  const v = raw as RawValue & CamelValue;
  const string = v.string_value ?? v.stringValue;
  if (string !== undefined) return string;
  const number = v.number_value ?? v.numberValue;
  if (number !== undefined) return number;
  const bool = v.bool_value ?? v.boolValue;
  if (bool !== undefined) return bool;
  const struct = v.struct_value ?? v.structValue;
  if (struct !== undefined) return structToJson(struct);
  const list = v.list_value ?? v.listValue;
  if (list !== undefined) return (list.values ?? []).map(valueToJson);
  return null;
}

interface CamelValue {
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: RawStruct;
  listValue?: { values?: RawValue[] };
}
