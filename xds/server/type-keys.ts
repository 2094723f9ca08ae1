// The keys the cache and the streams file resources under: a type per kind of proxy, and a wildcard
// list per view key.
import type { ProxyKind } from '../proxy/proxy.js';

// typeKey is computed per request and per response; the same few keys come back, so they are made
// once and reused (a reused string keeps its hash, which Map lookups by it need). Bounded: a client
// may name any type URL, and past MEMO_TYPE_KEYS the key is built each time.
const MEMO_TYPE_KEYS = 64;
const typeKeys = new Map<ProxyKind, Map<string, string>>();

export function typeKey(kind: ProxyKind, typeUrl: string): string {
  let byType = typeKeys.get(kind);
  if (!byType) typeKeys.set(kind, (byType = new Map<string, string>()));
  let key = byType.get(typeUrl);
  if (key === undefined) {
    key = `${kind} ${typeUrl}`;
    if (byType.size < MEMO_TYPE_KEYS) byType.set(typeUrl, key);
  }
  return key;
}

export function wildcardKey(kind: ProxyKind, typeUrl: string, viewKey: string): string {
  return `${kind}\0${typeUrl}\0${viewKey}`;
}
