// The xDS messages as the agent's proxy handles them: responses read just enough to cache their
// resources (the bytes are forwarded as they came, with the agent's own nonce appended — a later
// occurrence of a singular protobuf field wins), requests re-encoded for the control plane, and the
// node of a local client checked against, and completed with, the agent's identity.
import { status } from '@grpc/grpc-js';
import { messageType } from '../../xds/proto/protos.js';
import { hashBytes, type EncodedResource } from '../../xds/proto/resource.js';
import {
  decodeDiscoveryRequest,
  encodeDeltaDiscoveryRequest,
  encodeDiscoveryRequest,
} from '../../xds/proto/wire.js';
import { NodeError, proxyFromNode, type NodeInfo } from '../../xds/proxy/proxy.js';

export type Api = 'sotw' | 'delta';

export interface SotwResponse {
  readonly versionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  /** Named by their field 1 (`name`, or `cluster_name` of a load assignment); version: hash of the bytes. */
  readonly resources: readonly EncodedResource[];
}

export interface DeltaResponse {
  readonly systemVersion: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly resources: readonly EncodedResource[];
  readonly removed: readonly string[];
}

interface RawAny {
  type_url?: string;
  value?: Uint8Array;
}

export function readSotwResponse(bytes: Buffer): SotwResponse {
  const type = messageType('envoy.service.discovery.v3.DiscoveryResponse');
  const raw = type.decode(bytes) as unknown as {
    version_info?: string;
    type_url?: string;
    nonce?: string;
    resources?: RawAny[];
  };
  return {
    versionInfo: raw.version_info ?? '',
    typeUrl: raw.type_url ?? '',
    nonce: raw.nonce ?? '',
    resources: (raw.resources ?? []).map((any) => {
      const value = Buffer.from(any.value ?? new Uint8Array());
      return { name: fieldOneString(value), typeUrl: any.type_url ?? '', value, version: hashBytes(value) };
    }),
  };
}

export function readDeltaResponse(bytes: Buffer): DeltaResponse {
  const type = messageType('envoy.service.discovery.v3.DeltaDiscoveryResponse');
  const raw = type.decode(bytes) as unknown as {
    system_version_info?: string;
    type_url?: string;
    nonce?: string;
    resources?: { name?: string; version?: string; resource?: RawAny }[];
    removed_resources?: string[];
  };
  const resources: EncodedResource[] = [];
  for (const r of raw.resources ?? []) {
    // A resource without a body only refreshes a TTL: nothing to keep.
    if (!r.resource?.value) continue;
    resources.push({
      name: r.name ?? '',
      version: r.version ?? '',
      typeUrl: r.resource.type_url ?? '',
      value: Buffer.from(r.resource.value),
    });
  }
  return {
    systemVersion: raw.system_version_info ?? '',
    typeUrl: raw.type_url ?? '',
    nonce: raw.nonce ?? '',
    resources,
    removed: raw.removed_resources ?? [],
  };
}

/** The first length-delimited field 1 of a message, as a string: the name of every xDS resource type. */
export function fieldOneString(buf: Buffer): string {
  let pos = 0;
  const varint = (): number => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (pos >= buf.length) throw new RangeError('truncated varint');
      const b = buf[pos++] ?? 0;
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return result;
      shift += 7;
      if (shift > 63) throw new RangeError('varint too long');
    }
  };
  try {
    while (pos < buf.length) {
      const tag = varint();
      const wire = tag & 7;
      if (wire === 2) {
        const len = varint();
        if (tag >>> 3 === 1) return buf.toString('utf8', pos, pos + len);
        pos += len;
      } else if (wire === 0) varint();
      else if (wire === 1) pos += 8;
      else if (wire === 5) pos += 4;
      else return '';
    }
  } catch {
    return '';
  }
  return '';
}

/** A protobufjs plain object of envoy.config.core.v3.Node (snake_case fields). */
export type NodeObject = Record<string, unknown>;

export interface SotwRequestFields {
  readonly node?: NodeObject;
  readonly typeUrl: string;
  readonly names: readonly string[];
  readonly versionInfo: string;
  readonly nonce: string;
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

export function encodeSotwRequest(r: SotwRequestFields): Buffer {
  return encodeDiscoveryRequest({
    ...(r.node && { node: r.node }),
    type_url: r.typeUrl,
    resource_names: [...r.names],
    version_info: r.versionInfo,
    response_nonce: r.nonce,
    ...(r.errorDetail && { error_detail: { code: r.errorDetail.code, message: r.errorDetail.message } }),
  });
}

export interface DeltaRequestFields {
  readonly node?: NodeObject;
  readonly typeUrl: string;
  readonly subscribe: readonly string[];
  readonly unsubscribe: readonly string[];
  readonly initialVersions?: ReadonlyMap<string, string>;
  readonly nonce: string;
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

export function encodeDeltaRequest(r: DeltaRequestFields): Buffer {
  return encodeDeltaDiscoveryRequest({
    ...(r.node && { node: r.node }),
    type_url: r.typeUrl,
    resource_names_subscribe: [...r.subscribe],
    resource_names_unsubscribe: [...r.unsubscribe],
    ...(r.initialVersions &&
      r.initialVersions.size > 0 && { initial_resource_versions: Object.fromEntries(r.initialVersions) }),
    response_nonce: r.nonce,
    ...(r.errorDetail && { error_detail: { code: r.errorDetail.code, message: r.errorDetail.message } }),
  });
}

/** The agent's workload identity, which every local node speaks for. */
export interface AgentIdentity {
  readonly trustDomain: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}

export type NodeClaim =
  | {
      readonly ok: true;
      readonly node: NodeObject;
      readonly info: NodeInfo;
      /** Metadata keys taken out (registration belongs to the agent's own stream). */
      readonly stripped: readonly string[];
    }
  | { readonly ok: false; readonly code: status; readonly message: string };

/** The longest node id a local client may send (Istio's are under 200 bytes). */
export const MAX_NODE_ID_BYTES = 1024;
/** The largest node a local client may send, metadata included (real ones are a few KiB). */
export const MAX_NODE_BYTES = 64 * 1024;
/** A NACK's error_detail message is cut to this before it is forwarded or logged. */
export const MAX_ERROR_DETAIL_BYTES = 4096;

/**
 * Node metadata that writes mesh state under the VM's identity: auto-registration into a
 * WorkloadGroup. Only the agent's own control stream may carry it; a local client's is removed
 * (a real Envoy bootstrapped with it still gets its config; the agent registers the VM itself).
 */
export const AGENT_ONLY_METADATA: readonly string[] = ['AUTO_REGISTER_GROUP'];

/** `text` cut to at most `maxBytes` of UTF-8 (marked when cut), for strings a client sends. */
export function boundText(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  // Cutting bytes may split a character: the decoder replaces the torn tail, within a few bytes.
  return `${Buffer.from(text).subarray(0, maxBytes).toString('utf8')}… (cut at ${maxBytes} bytes)`;
}

/** A NACK's error_detail as the agent forwards and logs it: its message bounded. */
export function boundErrorDetail(
  detail: { readonly code: number; readonly message: string } | undefined,
): { readonly code: number; readonly message: string } | undefined {
  return detail && { code: detail.code, message: boundText(detail.message, MAX_ERROR_DETAIL_BYTES) };
}

/**
 * The node of a local client's request (`bytes`), completed with the agent's identity where it
 * leaves NAMESPACE, SERVICE_ACCOUNT or TRUST_DOMAIN out, or refused when it claims another, has an
 * id or a size beyond the bounds. Registration metadata (AGENT_ONLY_METADATA) is taken out.
 */
export function claimNode(bytes: Buffer, api: Api, id: AgentIdentity): NodeClaim {
  const typeName =
    api === 'sotw'
      ? 'envoy.service.discovery.v3.DiscoveryRequest'
      : 'envoy.service.discovery.v3.DeltaDiscoveryRequest';
  const type = messageType(typeName);
  const request = type.toObject(type.decode(bytes), { longs: String, enums: String }) as {
    node?: NodeObject;
  };
  const node = request.node;
  if (!node)
    return { ok: false, code: status.INVALID_ARGUMENT, message: 'the first request must carry node' };
  const nodeId = typeof node.id === 'string' ? node.id : '';
  if (Buffer.byteLength(nodeId) > MAX_NODE_ID_BYTES)
    return {
      ok: false,
      code: status.INVALID_ARGUMENT,
      message: `node.id is ${Buffer.byteLength(nodeId)} bytes; at most ${MAX_NODE_ID_BYTES} are accepted`,
    };
  const nodeType = messageType('envoy.config.core.v3.Node');
  const nodeBytes = nodeType.encode(nodeType.fromObject(node)).finish().length;
  if (nodeBytes > MAX_NODE_BYTES)
    return {
      ok: false,
      code: status.INVALID_ARGUMENT,
      message: `node ${nodeId} is ${nodeBytes} bytes with its metadata; at most ${MAX_NODE_BYTES} are accepted`,
    };
  const metadata = (node.metadata ?? {}) as { fields?: Record<string, Record<string, unknown>> };
  const fields = { ...(metadata.fields ?? {}) };
  const stripped = AGENT_ONLY_METADATA.filter((key) => key in fields);
  for (const key of stripped) delete fields[key];
  const wanted: Record<string, string> = {
    NAMESPACE: id.namespace,
    SERVICE_ACCOUNT: id.serviceAccount,
    TRUST_DOMAIN: id.trustDomain,
  };
  const self = `spiffe://${id.trustDomain}/ns/${id.namespace}/sa/${id.serviceAccount}`;
  for (const [key, value] of Object.entries(wanted)) {
    const field = fields[key];
    const claimed = field && (field.stringValue ?? field.string_value);
    const hasOther = field && claimed === undefined && Object.keys(field).length > 0;
    if (hasOther)
      return { ok: false, code: status.INVALID_ARGUMENT, message: `node metadata ${key} must be a string` };
    if (claimed === undefined || claimed === '') fields[key] = stringValue(value);
    else if (claimed !== value)
      return {
        ok: false,
        code: status.PERMISSION_DENIED,
        message: `node ${nodeId} claims ${key}=${boundText(typeof claimed === 'string' ? claimed : JSON.stringify(claimed), 256)}, but this agent is ${self}: a local client speaks only for the agent's identity`,
      };
  }
  const completed: NodeObject = { ...node, metadata: { ...metadata, fields } };
  const info = nodeInfo(completed);
  try {
    proxyFromNode(info);
  } catch (err) {
    if (err instanceof NodeError)
      return { ok: false, code: status.INVALID_ARGUMENT, message: `invalid node: ${err.message}` };
    throw err;
  }
  return { ok: true, node: completed, info, stripped };
}

// The Value message of the loaded Struct names its fields either way (see xds/proto/wire.ts).
function stringValue(value: string): Record<string, unknown> {
  const fields = messageType('google.protobuf.Value').fields;
  return 'string_value' in fields ? { string_value: value } : { stringValue: value };
}

/** NodeInfo of the completed node, through the same decoder the control plane uses. */
function nodeInfo(node: NodeObject): NodeInfo {
  return decodeDiscoveryRequest(encodeDiscoveryRequest({ node, type_url: 'x' })).node ?? {};
}
