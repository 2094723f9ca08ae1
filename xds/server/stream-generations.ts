// Which config generation (config-dir/generations.ts) each response of one stream was generated at,
// and which generations changed something for the stream: what GET /debug/waitz reads to tell
// whether a stream has taken a generation in (admin/waitz.ts). Small and bounded per stream: per
// type the last few responses' nonces, which an ACK or NACK names.

/** Responses per type whose generation is kept for a NACK to name (delta may have several out). */
const KEPT_PER_TYPE = 8;

interface TypeGenerations {
  /** The generation of the last response sent. */
  sent: number;
  /** The nonces of the last responses sent, oldest first, with their generations. */
  readonly nonces: { nonce: string; generation: number }[];
  /** The generation of the response the NACK in force rejected. */
  nacked: number | undefined;
}

export class StreamGenerations {
  /** The highest generation a push handed this stream work at (-1: none). */
  changed = -1;
  /** The generation of the stream's first response (undefined before any). */
  firstSent: number | undefined;
  private readonly types = new Map<string, TypeGenerations>();

  /** A response with `nonce` went out, generated at `generation`. */
  sent(typeUrl: string, nonce: string, generation: number): void {
    this.firstSent ??= generation;
    let t = this.types.get(typeUrl);
    if (!t) this.types.set(typeUrl, (t = { sent: generation, nonces: [], nacked: undefined }));
    t.sent = generation;
    t.nonces.push({ nonce, generation });
    if (t.nonces.length > KEPT_PER_TYPE) t.nonces.shift();
  }

  /** The client rejected the response with `nonce`: returns the generation it was generated at. */
  nacked(typeUrl: string, nonce: string): number | undefined {
    const t = this.types.get(typeUrl);
    if (!t) return undefined;
    t.nacked = t.nonces.find((n) => n.nonce === nonce)?.generation ?? t.sent;
    return t.nacked;
  }

  /** The client accepted the response with `nonce`: the NACK in force, if any, is over. */
  acked(typeUrl: string): void {
    const t = this.types.get(typeUrl);
    if (t) t.nacked = undefined;
  }

  /** The generation of `typeUrl`'s last response, and of the response its NACK in force rejected. */
  of(typeUrl: string): { readonly sent: number; readonly nacked: number | undefined } | undefined {
    return this.types.get(typeUrl);
  }
}
