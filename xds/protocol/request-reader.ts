// A fast path for the requests that dominate at scale: ACKs and NACKs, which carry no node, and each
// stream's first request, whose node a proxyless client fills with a few strings, metadata, locality
// and client features. Reading their fields by hand avoids protobufjs's object conversion for every
// ACK of every push and for every stream's node; a request with any field this reader does not know,
// or in an unexpected shape (Envoy's extensions and build version, a wrong wire type, a Struct entry
// without value), returns undefined and goes through the full decoder, which then decides.
import type { NodeInfo } from '../proxy/proxy.js';
import {
  toNodeInfo,
  type DeltaDiscoveryRequest,
  type DiscoveryRequest,
  type RawNode,
  type RawStruct,
  type RawValue,
} from '../proto/wire.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';

// The type URLs requests name, as bytes: a match returns the constant string instead of decoding a
// new one per request (less garbage, and map lookups by it hash an interned string).
const KNOWN_TYPE_URLS: readonly [Buffer, string][] = [LISTENER, ROUTE, CLUSTER, ENDPOINT].map((t) => [
  Buffer.from(t),
  t,
]);

/**
 * Reads fields of the message in buf[pos, end): nested messages are read in place (`sub`) and
 * strings decoded straight from the buffer, with no slice per field.
 */
class Reader {
  constructor(
    readonly buf: Buffer,
    public pos = 0,
    readonly end = buf.length,
  ) {}
  get done(): boolean {
    return this.pos >= this.end;
  }
  varint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.end) throw new RangeError('truncated varint');
      const b = this.buf[this.pos++] ?? 0;
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return result;
      shift += 7;
      if (shift > 63) throw new RangeError('varint too long');
    }
  }
  /** A length-delimited field's end (its bytes start at `pos`). */
  private fieldEnd(): number {
    const length = this.varint(); // read first: it moves `pos`
    const end = this.pos + length;
    if (end > this.end) throw new RangeError('truncated field');
    return end;
  }
  /** The length-delimited field at `pos`, as a reader of its own; this one moves past it. */
  sub(): Reader {
    const end = this.fieldEnd();
    const r = new Reader(this.buf, this.pos, end);
    this.pos = end;
    return r;
  }
  string(): string {
    const end = this.fieldEnd();
    const s = this.buf.toString('utf8', this.pos, end);
    this.pos = end;
    return s;
  }
  typeUrl(): string {
    const end = this.fieldEnd();
    const start = this.pos;
    this.pos = end;
    for (const [known, text] of KNOWN_TYPE_URLS)
      if (end - start === known.length && sameBytes(known, this.buf, start)) return text;
    return this.buf.toString('utf8', start, end);
  }
  double(): number {
    if (this.pos + 8 > this.end) throw new RangeError('truncated double');
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  skip(n: number): void {
    if (this.pos + n > this.end) throw new RangeError('truncated field');
    this.pos += n;
  }
}

/**
 * Whether buf[start, start + known.length) holds `known`'s bytes. Compared here rather than with
 * Buffer.compare, a call into C++ that costs more than the few dozen bytes of a type URL (and the
 * URLs differ first near their end, so from the end).
 */
function sameBytes(known: Buffer, buf: Buffer, start: number): boolean {
  for (let i = known.length - 1; i >= 0; i--) if (known[i] !== buf[start + i]) return false;
  return true;
}

/** google.rpc.Status: code (1), message (2); details are not needed. */
function readStatus(r: Reader): { code: number; message: string } {
  let code = 0;
  let message = '';
  while (!r.done) {
    const tag = r.varint();
    if (tag === 8) code = r.varint() | 0;
    else if (tag === 18) message = r.string();
    else if ((tag & 7) === 0) r.varint();
    else if ((tag & 7) === 2) r.skip(r.varint());
    else throw new RangeError('unexpected wire type');
  }
  return { code, message };
}

/** Thrown inside the node reader for a shape it leaves to the full decoder. */
class NotPlain extends Error {}

/** Struct nesting the hand reader follows; deeper metadata goes to the full decoder. */
const MAX_DEPTH = 16;

/**
 * envoy.config.core.v3.Node: id (1), cluster (2), metadata (3), locality (4), user_agent_name (6),
 * user_agent_version (7), client_features (10, not kept: toNodeInfo drops them). Anything else throws
 * NotPlain; the result goes through the decoder's own toNodeInfo, so both paths convert alike.
 */
function readNode(r: Reader): NodeInfo {
  const node: { -readonly [K in keyof RawNode]: RawNode[K] } = {};
  while (!r.done) {
    const tag = r.varint();
    if (tag === 10) node.id = r.string();
    else if (tag === 18) node.cluster = r.string();
    else if (tag === 26 && !node.metadata) node.metadata = readStruct(r.sub(), 0);
    else if (tag === 34 && !node.locality) node.locality = readLocality(r.sub());
    else if (tag === 50) node.user_agent_name = r.string();
    else if (tag === 58) node.user_agent_version = r.string();
    else if (tag === 82) r.skip(r.varint());
    else throw new NotPlain();
  }
  return toNodeInfo(node);
}

/** Locality: region (1), zone (2), sub_zone (3), keyed in declaration order as toObject makes them. */
function readLocality(r: Reader): { region?: string; zone?: string; sub_zone?: string } {
  let region: string | undefined;
  let zone: string | undefined;
  let subZone: string | undefined;
  while (!r.done) {
    const tag = r.varint();
    if (tag === 10) region = r.string();
    else if (tag === 18) zone = r.string();
    else if (tag === 26) subZone = r.string();
    else throw new NotPlain();
  }
  return {
    ...(region !== undefined && { region }),
    ...(zone !== undefined && { zone }),
    ...(subZone !== undefined && { sub_zone: subZone }),
  };
}

/** google.protobuf.Struct: entries (1) of key (1) and Value (2); an entry without both is not plain. */
function readStruct(r: Reader, depth: number): RawStruct {
  if (depth > MAX_DEPTH) throw new NotPlain();
  const fields: Record<string, RawValue> = {};
  while (!r.done) {
    if (r.varint() !== 10) throw new NotPlain();
    const entry = r.sub();
    let key: string | undefined;
    let value: RawValue | undefined;
    while (!entry.done) {
      const tag = entry.varint();
      if (tag === 10 && key === undefined) key = entry.string();
      else if (tag === 18 && value === undefined) value = readValue(entry.sub(), depth);
      else throw new NotPlain();
    }
    // `__proto__` would set the object's prototype rather than a field: the decoder's own business.
    if (key === undefined || value === undefined || key === '__proto__') throw new NotPlain();
    fields[key] = value;
  }
  return { fields };
}

/**
 * google.protobuf.Value with exactly one member: null (1), number (2), string (3), bool (4), struct
 * (5), list (6) of Values (1).
 */
function readValue(r: Reader, depth: number): RawValue {
  let value: RawValue | undefined;
  while (!r.done) {
    if (value) throw new NotPlain();
    const tag = r.varint();
    if (tag === 8) {
      r.varint();
      value = {};
    } else if (tag === 17) value = { number_value: r.double() };
    else if (tag === 26) value = { string_value: r.string() };
    else if (tag === 32) {
      const b = r.varint();
      if (b > 1) throw new NotPlain(); // the decoder reads the low 32 bits
      value = { bool_value: b === 1 };
    } else if (tag === 42) value = { struct_value: readStruct(r.sub(), depth + 1) };
    else if (tag === 50) {
      const list = r.sub();
      const values: RawValue[] = [];
      while (!list.done) {
        if (list.varint() !== 10) throw new NotPlain();
        values.push(readValue(list.sub(), depth + 1));
      }
      value = { list_value: { values } };
    } else throw new NotPlain();
  }
  if (!value) throw new NotPlain();
  return value;
}

/**
 * A SotW request whose node (if any) is plain (readNode), or undefined to use the full decoder (also
 * when it lists more than `maxNames` names: the caller then counts them without decoding and refuses
 * the request).
 */
export function readPlainRequest(buf: Buffer, maxNames = Infinity): DiscoveryRequest | undefined {
  const r = new Reader(buf);
  let versionInfo = '';
  let typeUrl = '';
  let responseNonce = '';
  const resourceNames: string[] = [];
  let errorDetail: { code: number; message: string } | undefined;
  let node: NodeInfo | undefined;
  try {
    while (!r.done) {
      const tag = r.varint();
      if (tag === 10) versionInfo = r.string();
      else if (tag === 18 && !node) node = readNode(r.sub());
      else if (tag === 26) {
        if (resourceNames.length >= maxNames) return undefined;
        resourceNames.push(r.string());
      } else if (tag === 34) typeUrl = r.typeUrl();
      else if (tag === 42) responseNonce = r.string();
      else if (tag === 50) errorDetail = readStatus(r.sub());
      else return undefined;
    }
  } catch {
    return undefined;
  }
  // The decoder's shape, field for field (decodeDiscoveryRequest): absent fields are undefined.
  return { versionInfo, node, resourceNames, typeUrl, responseNonce, errorDetail };
}

/** Where a request message keeps resource names and its type URL (tags: field << 3 | 2). */
export interface RequestFields {
  readonly namesTags: readonly number[];
  readonly typeUrlTag: number;
}

/** DiscoveryRequest: resource_names = 3, type_url = 4. */
export const SOTW_FIELDS: RequestFields = { namesTags: [26], typeUrlTag: 34 };
/** DeltaDiscoveryRequest: resource_names_subscribe = 3, _unsubscribe = 4, initial_resource_versions = 5, type_url = 2. */
export const DELTA_FIELDS: RequestFields = { namesTags: [26, 34, 42], typeUrlTag: 18 };

/**
 * How many resource names a request lists, and its type URL, read without decoding anything else:
 * limits are checked before the cost of a large request is paid. A malformed message scans as what
 * was read before the fault (the decoder then refuses it).
 */
export function scanRequest(buf: Buffer, fields: RequestFields): { names: number; typeUrl: string } {
  const r = new Reader(buf);
  let names = 0;
  let typeUrl = '';
  try {
    while (!r.done) {
      const tag = r.varint();
      const wire = tag & 7;
      if (fields.namesTags.includes(tag)) {
        names += 1;
        r.skip(r.varint());
      } else if (tag === fields.typeUrlTag) typeUrl = r.typeUrl();
      else if (wire === 2) r.skip(r.varint());
      else if (wire === 0) r.varint();
      else if (wire === 1) r.skip(8);
      else if (wire === 5) r.skip(4);
      else break;
    }
  } catch {
    // truncated: report what was read
  }
  return { names, typeUrl };
}

const NO_VERSIONS: ReadonlyMap<string, string> = new Map();

/**
 * A delta request without node and initial versions, or undefined to use the full decoder (also
 * when it lists more than `maxNames` names, as readPlainRequest).
 */
export function readPlainDeltaRequest(buf: Buffer, maxNames = Infinity): DeltaDiscoveryRequest | undefined {
  const r = new Reader(buf);
  let typeUrl = '';
  let responseNonce = '';
  const subscribe: string[] = [];
  const unsubscribe: string[] = [];
  let errorDetail: { code: number; message: string } | undefined;
  try {
    while (!r.done) {
      const tag = r.varint();
      if (tag === 18) typeUrl = r.typeUrl();
      else if (tag === 26 || tag === 34) {
        if (subscribe.length + unsubscribe.length >= maxNames) return undefined;
        (tag === 26 ? subscribe : unsubscribe).push(r.string());
      } else if (tag === 50) responseNonce = r.string();
      else if (tag === 58) errorDetail = readStatus(r.sub());
      else return undefined;
    }
  } catch {
    return undefined;
  }
  // The decoder's shape, field for field (decodeDeltaDiscoveryRequest): absent fields are undefined.
  return {
    node: undefined,
    typeUrl,
    subscribe,
    unsubscribe,
    initialVersions: NO_VERSIONS,
    responseNonce,
    errorDetail,
  };
}
