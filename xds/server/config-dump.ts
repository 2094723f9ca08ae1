// What a client was last sent, decoded, per type (/debug/config_dump for clients other than Envoy).
import { decodeAny } from '../proto/protos.js';
import { shortTypeName } from '../proto/type-urls.js';
import type { StreamView } from './observer.js';

export function configDump(stream: StreamView): Record<string, unknown>[] {
  return stream.typeStatus().map((t) => ({
    type: shortTypeName(t.typeUrl),
    typeUrl: t.typeUrl,
    version: t.sentVersion,
    resources: stream.heldResources(t.typeUrl).map((r) => decodeAny(r.typeUrl, r.value)),
  }));
}
