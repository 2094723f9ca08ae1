// Which config generation (config-dir/generations.ts) each response of one stream was generated at,
// and which generations changed something for the stream: what GET /debug/waitz reads to tell
// whether a stream has taken a generation in (admin/waitz.ts). Small and bounded per stream: per
// type the nonces of the responses not answered yet (one, for a client that keeps up; at most
// KEPT_PER_TYPE), which an ACK or NACK names.

/** Unanswered responses per type whose generation is kept for a NACK to name (delta may have several out). */
const KEPT_PER_TYPE = 4;

interface TypeGenerations {
  /** The generation of the last response sent. */
  sent: number;
  /**
   * The latest response sent and not answered yet (undefined once answered), with its generation:
   * kept in the record itself, since a client that keeps up has one at most. Every stream holds one
   * record per type for its life, so no array or pair object is made for the usual case.
   */
  lastNonce: string | undefined;
  lastGeneration: number;
  /** Earlier responses not answered yet, oldest first (delta may have several out); made when needed. */
  earlier: { nonce: string; generation: number }[] | undefined;
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
    if (!t) {
      t = {
        sent: generation,
        lastNonce: undefined,
        lastGeneration: 0,
        earlier: undefined,
        nacked: undefined,
      };
      this.types.set(typeUrl, t);
    }
    t.sent = generation;
    if (t.lastNonce !== undefined) {
      const earlier = (t.earlier ??= []);
      earlier.push({ nonce: t.lastNonce, generation: t.lastGeneration });
      // KEPT_PER_TYPE in all, the latest included.
      if (earlier.length > KEPT_PER_TYPE - 1) earlier.shift();
    }
    t.lastNonce = nonce;
    t.lastGeneration = generation;
  }

  /** The client rejected the response with `nonce`: returns the generation it was generated at. */
  nacked(typeUrl: string, nonce: string): number | undefined {
    const t = this.types.get(typeUrl);
    if (!t) return undefined;
    t.nacked = answer(t, nonce) ?? t.sent;
    return t.nacked;
  }

  /** The client accepted the response with `nonce`: the NACK in force, if any, is over. */
  acked(typeUrl: string, nonce: string): void {
    const t = this.types.get(typeUrl);
    if (!t) return;
    t.nacked = undefined;
    answer(t, nonce);
  }

  /** The generation of `typeUrl`'s last response, and of the response its NACK in force rejected. */
  of(typeUrl: string): { readonly sent: number; readonly nacked: number | undefined } | undefined {
    return this.types.get(typeUrl);
  }
}

/** Forgets `nonce` and the responses before it (answered, or overtaken); returns its generation. */
function answer(t: TypeGenerations, nonce: string): number | undefined {
  if (nonce === t.lastNonce) {
    t.lastNonce = undefined;
    t.earlier = undefined;
    return t.lastGeneration;
  }
  const earlier = t.earlier;
  const i = earlier ? earlier.findIndex((n) => n.nonce === nonce) : -1;
  if (!earlier || i < 0) return undefined;
  const generation = earlier[i]?.generation;
  earlier.splice(0, i + 1);
  if (earlier.length === 0) t.earlier = undefined;
  return generation;
}
