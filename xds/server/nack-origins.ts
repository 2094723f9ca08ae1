// What the resources a stream was last sent of a type were built from: per resource, the keys its
// cached build read (generators/reads.ts: Services, endpoints and traffic rules of hostnames, config
// kinds read as a whole). The NACK marks of /debug/configz (admin/nack-marks.ts) map these keys to
// the config files that define them. Read-only: nothing is built, a resource whose build is not
// cached (evicted, or gone since) is left out.
import type { GeneratorLookup, ReadSet } from '../generators/generator.js';
import type { StreamView } from './observer.js';
import type { ResourceCache } from './resource-cache.js';

/** One resource the stream holds (as last sent), and what its build read. */
export interface SentOrigin {
  readonly name: string;
  readonly reads: ReadSet;
}

export function sentOrigins(
  cache: ResourceCache,
  generators: GeneratorLookup,
  stream: StreamView,
  typeUrl: string,
): SentOrigin[] {
  const proxy = stream.proxy;
  const generator = proxy && generators.find(proxy.kind, typeUrl);
  if (!proxy || !generator) return [];
  const viewKey = cache.viewKey(generator, proxy);
  const out: SentOrigin[] = [];
  for (const resource of stream.heldResources(typeUrl)) {
    const reads = cache.readsOf(generator, proxy, resource.name, viewKey);
    if (reads) out.push({ name: resource.name, reads });
  }
  return out;
}
