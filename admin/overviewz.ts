// GET /debug/overviewz: the first screen of the dashboard, cheap to poll — readiness, each registry's
// sync state, counts, proxies by sync state, and the recent errors (config files with file:line,
// failing registries, NACKs).
import type { AggregateDiscovery } from '../aggregate/aggregate-discovery.js';
import type { ConfigDebugState } from '../config-dir/debug-state.js';
import type { OverviewzView, Readiness, RecentError, SyncState } from '../model/admin-api.js';
import type { AdsServer } from '../xds/server/ads-server.js';
import type { PushHistory } from './push-history.js';
import { syncz } from './syncz.js';

export type { OverviewzView, Readiness, RecentError } from '../model/admin-api.js';

export function readiness(discovery: AggregateDiscovery): Readiness {
  const waiting = discovery.registries.filter((r) => !r.hasSynced()).map((r) => r.name);
  if (waiting.length > 0)
    return { ready: false, detail: `not ready: waiting for registries to sync: ${waiting.join(', ')}` };
  // Synced and serving what did load, but a part whose content is unknown is missing.
  const unready = discovery.registries.flatMap((r) =>
    (r.status().unready ?? []).map((u) => `${r.name}: ${u}`),
  );
  if (unready.length > 0) return { ready: false, detail: `not ready: ${unready.join('; ')}` };
  const stored = discovery.registries.flatMap((r) => {
    const from = r.status().restoredFrom;
    return from ? [`${r.name} (synced at ${from})`] : [];
  });
  // Ready, but without part of a source (a Consul service whose query kept failing at start).
  const incomplete = discovery.registries.flatMap((r) => {
    const parts = r.status().incomplete ?? [];
    return parts.length ? [`${r.name} without ${parts.join(', ')}`] : [];
  });
  const notes = [
    ...(stored.length ? [`serving stored snapshots until live sync: ${stored.join(', ')}`] : []),
    ...(incomplete.length ? [`synced in part: ${incomplete.join('; ')}`] : []),
  ];
  return { ready: true, detail: notes.length ? `ready; ${notes.join('; ')}` : 'ready' };
}

export function overviewz(
  discovery: AggregateDiscovery,
  ads: AdsServer,
  config: ConfigDebugState | undefined,
  history: PushHistory | undefined,
): OverviewzView {
  const registries = discovery.registries.map((r) => ({ name: r.name, status: r.status() }));
  const catalog = discovery.catalog();
  // Endpoints of the served hostnames, as the registries report them (before port mapping).
  const served = new Set(catalog.services().map((s) => s.hostname));
  let endpoints = 0;
  for (const r of discovery.registries)
    for (const [host, list] of r.snapshot().endpoints) if (served.has(host)) endpoints += list.length;
  const proxies = syncz(ads.streamList()).proxies;
  const proxiesByState: Record<SyncState, number> = { SYNCED: 0, 'NOT SENT': 0, STALE: 0, NACK: 0 };
  for (const p of proxies) proxiesByState[p.state] += 1;
  const errors: RecentError[] = [];
  for (const f of config?.files ?? []) {
    for (const e of f.errors) {
      errors.push({
        at: f.checkedAt,
        source: 'config',
        subject: `${f.path}:${e.line}`,
        message: e.path ? `${e.path}: ${e.message}` : e.message,
      });
    }
  }
  for (const r of registries) {
    if (r.status.lastError)
      errors.push({
        at: r.status.lastErrorAt ?? '',
        source: 'registry',
        subject: r.name,
        message: r.status.lastError,
      });
  }
  for (const n of history?.nacks().slice(0, 20) ?? []) {
    errors.push({
      at: n.at,
      source: 'proxy',
      subject: `${n.node ?? n.connection} ${n.type}`,
      message: n.message,
    });
  }
  errors.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
  return {
    ...readiness(discovery),
    registries,
    counts: {
      services: catalog.services().length,
      endpoints,
      proxies: proxies.length,
      configFiles: config?.files.length ?? 0,
      configFilesWithErrors: config?.files.filter((f) => f.status === 'error').length ?? 0,
    },
    proxiesByState,
    pushes: ads.pushes,
    recentErrors: errors.slice(0, 50),
  };
}
