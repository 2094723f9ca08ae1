// The ADS messages on the wire: DiscoveryRequest decoding (with node metadata as plain JSON) and
// DiscoveryResponse encoding around already-encoded resources.
import type protobuf from 'protobufjs';
import { messageType, TO_OBJECT } from './protos.js';
import type { NodeInfo } from './proxy.js';
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
  return {
    versionInfo: raw.version_info ?? '',
    ...(raw.node && { node: toNodeInfo(raw.node) }),
    resourceNames: raw.resource_names ?? [],
    typeUrl: raw.type_url ?? '',
    responseNonce: raw.response_nonce ?? '',
    ...(status && { errorDetail: { code: status.code ?? 0, message: status.message ?? '' } }),
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

interface RawRequest {
  version_info?: string;
  node?: RawNode;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string };
}

interface RawNode {
  id?: string;
  cluster?: string;
  user_agent_name?: string;
  metadata?: RawStruct;
  locality?: { region?: string; zone?: string; sub_zone?: string };
}

interface RawStruct {
  fields?: Record<string, RawValue>;
}

interface RawValue {
  null_value?: string;
  number_value?: number;
  string_value?: string;
  bool_value?: boolean;
  struct_value?: RawStruct;
  list_value?: { values?: RawValue[] };
}

function toNodeInfo(node: RawNode): NodeInfo {
  return {
    ...(node.id !== undefined && { id: node.id }),
    ...(node.cluster !== undefined && { cluster: node.cluster }),
    ...(node.user_agent_name !== undefined && { user_agent_name: node.user_agent_name }),
    metadata: structToJson(node.metadata),
    ...(node.locality && { locality: node.locality }),
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
