// Just enough of the xDS wire for a load generator that must stay cheap: the top-level fields of a
// (Delta)DiscoveryResponse without decoding any resource, and the marker address an endpoint change
// carries, read straight from the bytes.

export interface ResponseHead {
  readonly versionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly resources: number;
}

function varint(buf: Buffer, pos: number): [number, number] {
  let result = 0;
  let shift = 0;
  for (;;) {
    const b = buf[pos++] ?? 0;
    result += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return [result, pos];
    shift += 7;
  }
}

/** Calls `visit` with each length-delimited top-level field of a message (others are skipped). */
function eachBytesField(buf: Buffer, visit: (field: number, start: number, end: number) => void): void {
  let pos = 0;
  while (pos < buf.length) {
    let tag;
    [tag, pos] = varint(buf, pos);
    const wire = tag & 7;
    if (wire === 0) {
      [, pos] = varint(buf, pos);
      continue;
    }
    if (wire !== 2) throw new Error(`unexpected wire type ${wire}`);
    let len;
    [len, pos] = varint(buf, pos);
    visit(Math.floor(tag / 8), pos, pos + len);
    pos += len;
  }
}

/** Fields 1 (version), 2 (resources, counted), 4 (type_url), 5 (nonce): the same in SotW and delta. */
export function readHead(buf: Buffer): ResponseHead {
  let versionInfo = '';
  let typeUrl = '';
  let nonce = '';
  let resources = 0;
  eachBytesField(buf, (field, start, end) => {
    if (field === 1) versionInfo = buf.toString('utf8', start, end);
    else if (field === 2) resources += 1;
    else if (field === 4) typeUrl = buf.toString('utf8', start, end);
    else if (field === 5) nonce = buf.toString('utf8', start, end);
  });
  return { versionInfo, typeUrl, nonce, resources };
}

export interface RequestHead {
  readonly typeUrl: string;
  /** response_nonce: empty on a subscription, set on an ACK or NACK. */
  readonly nonce: string;
  /** The first of resource_names ('' for a wildcard). */
  readonly name: string;
}

/** A SotW DiscoveryRequest's type_url (4), response_nonce (5) and first resource_names (3). */
export function readRequest(buf: Buffer): RequestHead {
  let typeUrl = '';
  let nonce = '';
  let name: string | undefined;
  eachBytesField(buf, (field, start, end) => {
    if (field === 3) name ??= buf.toString('utf8', start, end);
    else if (field === 4) typeUrl = buf.toString('utf8', start, end);
    else if (field === 5) nonce = buf.toString('utf8', start, end);
  });
  return { typeUrl, nonce, name: name ?? '' };
}

const MARKER = Buffer.from('10.200.');

/** The endpoint-change sequence number a response carries (address 10.200.HI.LO), or -1. */
export function markerSeq(buf: Buffer): number {
  let best = -1;
  for (let at = buf.indexOf(MARKER); at >= 0; at = buf.indexOf(MARKER, at + 1)) {
    let pos = at + MARKER.length;
    let hi = 0;
    let lo = 0;
    while ((buf[pos] ?? 0) >= 48 && (buf[pos] ?? 0) <= 57) hi = hi * 10 + (buf[pos++] ?? 48) - 48;
    if (buf[pos++] !== 46) continue;
    while ((buf[pos] ?? 0) >= 48 && (buf[pos] ?? 0) <= 57) lo = lo * 10 + (buf[pos++] ?? 48) - 48;
    best = Math.max(best, hi * 256 + lo);
  }
  return best;
}

/** The address that marks endpoint change `seq`. */
export function markerAddress(seq: number): string {
  return `10.200.${Math.floor(seq / 256)}.${seq % 256}`;
}

/** Milliseconds since the epoch at sub-millisecond resolution, comparable across processes. */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

function field(out: number[], tag: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  out.push(tag);
  for (let n = bytes.length; ; n >>>= 7) {
    if (n < 0x80) {
      out.push(n);
      break;
    }
    out.push((n & 0x7f) | 0x80);
  }
  for (const b of bytes) out.push(b);
}

/** A SotW ACK: version_info (1), resource_names (3), type_url (4), response_nonce (5). */
export function sotwAck(
  typeUrl: string,
  versionInfo: string,
  nonce: string,
  names: readonly string[],
): Buffer {
  const out: number[] = [];
  field(out, 10, versionInfo);
  for (const n of names) field(out, 26, n);
  field(out, 34, typeUrl);
  field(out, 42, nonce);
  return Buffer.from(out);
}

/** A delta ACK: type_url (2), response_nonce (6). */
export function deltaAck(typeUrl: string, nonce: string): Buffer {
  const out: number[] = [];
  field(out, 18, typeUrl);
  field(out, 50, nonce);
  return Buffer.from(out);
}
