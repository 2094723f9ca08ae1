// /debug/configz `withheld`: the resources not sent to some clients because they would reject them
// (xds/validate/withheld.ts), one row per client (user agent and version) with the connected
// proxies of that client that the rule matches and that hold or ask for the resource.
import type { WithheldPushView } from '../model/admin-api.js';
import { shortTypeName } from '../xds/proto/type-urls.js';
import { CLIENT_RULES } from '../xds/proxy/client-capabilities.js';
import type { Proxy } from '../xds/proxy/proxy.js';
import type { AdsServer } from '../xds/server/ads-server.js';
import type { WithheldPush, WithheldPushes } from '../xds/validate/withheld.js';

/** A connected proxy, and whether its stream holds or asks for a resource of a type. */
interface Holder {
  readonly proxy: Proxy;
  readonly holds: (typeUrl: string, name: string) => boolean;
}

export function withheldView(
  withheld: WithheldPushes | undefined,
  ads: Pick<AdsServer, 'connectionList' | 'deltaConnectionList'>,
): WithheldPushView[] {
  const entries = withheld?.list() ?? [];
  if (entries.length === 0) return [];
  const holders: Holder[] = [];
  for (const c of ads.connectionList())
    if (c.proxy)
      holders.push({
        proxy: c.proxy,
        holds: (typeUrl, name) => {
          const s = c.state.typeState(typeUrl);
          return s !== undefined && (s.wildcard || s.names.has(name));
        },
      });
  for (const c of ads.deltaConnectionList())
    if (c.proxy)
      holders.push({
        proxy: c.proxy,
        holds: (typeUrl, name) => {
          const s = c.state.type(typeUrl);
          return s !== undefined && (s.wildcard || s.names.has(name) || s.known.has(name));
        },
      });
  return entries.flatMap((e) => rows(e, holders));
}

function rows(entry: WithheldPush, holders: readonly Holder[]): WithheldPushView[] {
  const rule = CLIENT_RULES.find((r) => r.id === entry.rule);
  const byClient = new Map<string, { client: string; version: string; proxies: string[] }>();
  for (const { proxy, holds } of holders) {
    if (proxy.kind !== entry.kind || !(rule?.matches(proxy) ?? false)) continue;
    if (!holds(entry.typeUrl, entry.name)) continue;
    const key = `${proxy.userAgent}\0${proxy.userAgentVersion}`;
    let row = byClient.get(key);
    if (!row)
      byClient.set(key, (row = { client: proxy.userAgent, version: proxy.userAgentVersion, proxies: [] }));
    row.proxies.push(proxy.id);
  }
  // No connected proxy holds it: the client the build was for, with none (it may come back).
  if (byClient.size === 0)
    byClient.set('', { client: entry.userAgent, version: entry.userAgentVersion, proxies: [] });
  return [...byClient.values()].map((r) => ({
    client: r.client,
    clientVersion: r.version,
    type: shortTypeName(entry.typeUrl),
    name: entry.name,
    reason: entry.reason,
    rule: entry.rule,
    since: new Date(entry.since).toISOString(),
    count: entry.count,
    kept: entry.lastGood,
    proxies: r.proxies.sort(),
  }));
}
