// What a client was last sent, decoded, per type (/debug/config_dump for clients other than Envoy).
import { decodeAny } from '../proto/protos.js';
import { ENDPOINT, shortTypeName } from '../proto/type-urls.js';
import type { AdsStream } from './ads-stream.js';

export function configDump(stream: AdsStream): Record<string, unknown>[] {
  return stream.typeStatus().map((t) => ({
    type: shortTypeName(t.typeUrl),
    typeUrl: t.typeUrl,
    version: t.sentVersion,
    resources: stream.heldResources(t.typeUrl).map((r) => decodeForDump(r.typeUrl, r.value)),
  }));
}

/**
 * A held resource as a dump shows it. Load assignments differ per proxy (locality priorities), so
 * every locality group states its priority, 0 included (proto JSON would leave a 0 out).
 */
export function decodeForDump(typeUrl: string, value: Uint8Array): Record<string, unknown> {
  const decoded = decodeAny(typeUrl, value);
  if (typeUrl !== ENDPOINT || !Array.isArray(decoded.endpoints)) return decoded;
  return {
    ...decoded,
    endpoints: (decoded.endpoints as Record<string, unknown>[]).map((group) => ({
      ...group,
      priority: group.priority ?? 0,
    })),
  };
}
