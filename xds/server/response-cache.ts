// Shared SotW responses: streams of one view that subscribe to the same names send the same bytes,
// encoded once (without the nonce, which each stream appends). Entries live for one epoch of their
// type (ResourceCache.epoch): when anything of that type changes, the type's responses are dropped.
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

export class ResponseCache {
  private readonly byType = new Map<string, { epoch: number; responses: Map<string, SharedResponse> }>();
  hits = 0;
  misses = 0;

  get(
    typeKey: string,
    epoch: number,
    key: string,
    typeUrl: string,
    resources: () => readonly EncodedResource[],
  ): SharedResponse {
    let slot = this.byType.get(typeKey);
    if (!slot || slot.epoch !== epoch) this.byType.set(typeKey, (slot = { epoch, responses: new Map() }));
    const cached = slot.responses.get(key);
    if (cached) {
      this.hits += 1;
      return cached;
    }
    this.misses += 1;
    const list = resources();
    const version = versionOf(list);
    const response = {
      version,
      resources: list,
      names: list.map((r) => r.name),
      body: encodeResponseBody({ versionInfo: version, resources: list, typeUrl }),
    };
    slot.responses.set(key, response);
    return response;
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
