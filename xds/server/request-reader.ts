// A fast path for the requests that dominate at scale: ACKs and NACKs, which carry no node. Reading
// their few top-level fields by hand avoids protobufjs's object conversion for every ACK of every
// push; a request with a node (or any field this reader does not know) returns undefined and goes
// through the full decoder.
import type { DeltaDiscoveryRequest, DiscoveryRequest } from '../proto/wire.js';
import { CLUSTER, ENDPOINT, LISTENER, ROUTE } from '../proto/type-urls.js';

// The type URLs requests name, as bytes: a match returns the constant string instead of decoding a
// new one per request (less garbage, and map lookups by it hash an interned string).
const KNOWN_TYPE_URLS: readonly [Buffer, string][] = [LISTENER, ROUTE, CLUSTER, ENDPOINT].map((t) => [
  Buffer.from(t),
  t,
]);

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.buf.length) throw new RangeError('truncated varint');
      const b = this.buf[this.pos++] ?? 0;
      result += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return result;
      shift += 7;
      if (shift > 63) throw new RangeError('varint too long');
    }
  }
  bytes(): Buffer {
    const len = this.varint();
    const end = this.pos + len;
    if (end > this.buf.length) throw new RangeError('truncated field');
    const out = this.buf.subarray(this.pos, end);
    this.pos = end;
    return out;
  }
  string(): string {
    return this.bytes().toString('utf8');
  }
  typeUrl(): string {
    const b = this.bytes();
    for (const [known, text] of KNOWN_TYPE_URLS)
      if (b.length === known.length && b.equals(known)) return text;
    return b.toString('utf8');
  }
  skip(n: number): void {
    if (this.pos + n > this.buf.length) throw new RangeError('truncated field');
    this.pos += n;
  }
}

/** google.rpc.Status: code (1), message (2); details are not needed. */
function readStatus(buf: Buffer): { code: number; message: string } {
  const r = new Reader(buf);
  let code = 0;
  let message = '';
  while (!r.done) {
    const tag = r.varint();
    if (tag === 8) code = r.varint() | 0;
    else if (tag === 18) message = r.string();
    else if ((tag & 7) === 0) r.varint();
    else if ((tag & 7) === 2) r.bytes();
    else throw new RangeError('unexpected wire type');
  }
  return { code, message };
}

/**
 * A SotW request without node, or undefined to use the full decoder (also when it lists more than
 * `maxNames` names: the caller then counts them without decoding and refuses the request).
 */
export function readPlainRequest(buf: Buffer, maxNames = Infinity): DiscoveryRequest | undefined {
  const r = new Reader(buf);
  let versionInfo = '';
  let typeUrl = '';
  let responseNonce = '';
  const resourceNames: string[] = [];
  let errorDetail: { code: number; message: string } | undefined;
  try {
    while (!r.done) {
      const tag = r.varint();
      if (tag === 10) versionInfo = r.string();
      else if (tag === 26) {
        if (resourceNames.length >= maxNames) return undefined;
        resourceNames.push(r.string());
      } else if (tag === 34) typeUrl = r.typeUrl();
      else if (tag === 42) responseNonce = r.string();
      else if (tag === 50) errorDetail = readStatus(r.bytes());
      else return undefined;
    }
  } catch {
    return undefined;
  }
  return { versionInfo, typeUrl, responseNonce, resourceNames, ...(errorDetail && { errorDetail }) };
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
      else if (tag === 58) errorDetail = readStatus(r.bytes());
      else return undefined;
    }
  } catch {
    return undefined;
  }
  return {
    typeUrl,
    subscribe,
    unsubscribe,
    initialVersions: NO_VERSIONS,
    responseNonce,
    ...(errorDetail && { errorDetail }),
  };
}
