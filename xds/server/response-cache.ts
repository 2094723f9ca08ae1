// Shared SotW responses: streams of one view key that subscribe to the same names send the same bytes,
// encoded once (without the nonce, which each stream sends after the body). Entries live for one
// epoch of their type (ResourceCache.epoch): when anything of that type changes, the type's responses
// are dropped. Bounded besides: at most `maxEntries` responses and `maxBytes` of bodies, least
// recently used first out, and a timer drops those unused for `idleMs`. A stream that still holds a
// dropped body (a client that does not read) keeps that one body alive, shared with its peers.
import type { EncodedResource } from '../proto/resource.js';
import { versionOf } from '../proto/resource.js';
import { encodeResponseBody } from '../proto/wire.js';

export interface SharedResponse {
  readonly version: string;
  readonly resources: readonly EncodedResource[];
  /** The resources' names, shared by every stream that records this response as sent. */
  readonly names: readonly string[];
  readonly body: Buffer;
}

export interface ResponseCacheLimits {
  readonly maxEntries: number;
  readonly maxBytes: number;
  readonly idleMs: number;
}

export const DEFAULT_RESPONSE_CACHE_LIMITS: ResponseCacheLimits = {
  // A distinct response per view key and subscription: thousands of gRPC clients with their own
  // targets, a wildcard CDS per Envoy view key (about 0.5 MB at 1,000 services).
  maxEntries: 10_000,
  maxBytes: 256 * 1024 * 1024,
  idleMs: 5 * 60_000,
};

interface Cached {
  readonly typeKey: string;
  readonly key: string;
  readonly response: SharedResponse;
  usedAt: number;
  /** Neighbours in recency order (a hit moves an entry without hashing it). */
  older: Cached | undefined;
  newer: Cached | undefined;
  /** Whether the entry is still in the cache (unlinked entries may be held by a caller's lookup). */
  linked: boolean;
}

export class ResponseCache {
  // Looked up per type, then by the caller's key as it comes: no combined key string to build and
  // hash per response. Recency across all types is a list through the entries themselves: every
  // response a stream builds is a hit, and moving an entry in a list costs four pointers where a
  // set's delete-and-add costs two hash operations and, as deleted slots pile up, rehashing.
  private readonly types = new Map<string, { epoch: number; entries: Map<string, Cached> }>();
  /** The least recently used entry; `newest` the most recent. */
  private oldest: Cached | undefined;
  private newest: Cached | undefined;
  private entries = 0;
  private bodyBytes = 0;
  private readonly sweeper: NodeJS.Timeout;
  hits = 0;
  misses = 0;

  constructor(
    private readonly limits: ResponseCacheLimits = DEFAULT_RESPONSE_CACHE_LIMITS,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, limits.idleMs));
    this.sweeper.unref();
  }

  /** Responses kept, and the bytes of their bodies. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries, bytes: this.bodyBytes };
  }

  stop(): void {
    clearInterval(this.sweeper);
  }

  /** The cached response for `key`, or undefined (then `get` builds it). */
  lookup(typeKey: string, epoch: number, key: string): SharedResponse | undefined {
    const type = this.types.get(typeKey);
    if (!type || type.epoch !== epoch) return undefined;
    const cached = type.entries.get(key);
    if (!cached) return undefined;
    this.hit(cached);
    return cached.response;
  }

  get(
    typeKey: string,
    epoch: number,
    key: string,
    typeUrl: string,
    resources: () => readonly EncodedResource[],
  ): SharedResponse {
    let type = this.types.get(typeKey);
    if (!type || type.epoch !== epoch) {
      if (type) for (const c of type.entries.values()) this.remove(c);
      this.types.set(typeKey, (type = { epoch, entries: new Map() }));
    }
    const cached = type.entries.get(key);
    if (cached) {
      this.hit(cached);
      return cached.response;
    }
    this.misses += 1;
    const response = ownResponse(typeUrl, resources());
    const entry: Cached = {
      typeKey,
      key,
      response,
      usedAt: this.now(),
      older: undefined,
      newer: undefined,
      linked: false,
    };
    type.entries.set(key, entry);
    this.append(entry);
    this.entries += 1;
    this.bodyBytes += response.body.length;
    for (let oldest = this.oldest; oldest; oldest = this.oldest) {
      if (this.entries <= this.limits.maxEntries && this.bodyBytes <= this.limits.maxBytes) break;
      if (oldest === entry) break; // the one just built is served even if it alone is over the limit
      this.remove(oldest);
    }
    return response;
  }

  private hit(cached: Cached): void {
    this.hits += 1;
    cached.usedAt = this.now();
    if (cached === this.newest) return;
    this.unlink(cached);
    this.append(cached);
  }

  /** Drops responses unused for `idleMs` (run by a timer). */
  sweep(now = this.now()): void {
    // Least recently used first: the rest are newer.
    while (this.oldest && now - this.oldest.usedAt >= this.limits.idleMs) this.remove(this.oldest);
  }

  private remove(c: Cached): void {
    if (!c.linked) return;
    this.unlink(c);
    this.entries -= 1;
    this.bodyBytes -= c.response.body.length;
    const entries = this.types.get(c.typeKey)?.entries;
    if (entries?.get(c.key) === c) entries.delete(c.key);
  }

  private append(c: Cached): void {
    c.older = this.newest;
    c.newer = undefined;
    if (this.newest) this.newest.newer = c;
    else this.oldest = c;
    this.newest = c;
    c.linked = true;
  }

  private unlink(c: Cached): void {
    if (c.older) c.older.newer = c.newer;
    else this.oldest = c.newer;
    if (c.newer) c.newer.older = c.older;
    else this.newest = c.older;
    c.older = c.newer = undefined;
    c.linked = false;
  }
}

/** Builds an uncached response (a stream-specific one, such as one that keeps removed resources). */
export function ownResponse(typeUrl: string, resources: readonly EncodedResource[]): SharedResponse {
  const version = versionOf(resources);
  return {
    version,
    resources,
    names: resources.map((r) => r.name),
    body: encodeResponseBody({ versionInfo: version, resources, typeUrl }),
  };
}
