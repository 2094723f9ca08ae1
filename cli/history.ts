// `portolan history`: the store's recent config changes, registry events and proxy connections,
// read-only, so it can run beside a live `portolan serve`.
// With --store, the config changes and registry events are every replica's, from PostgreSQL; proxy
// connections are per replica and still come from --data-dir (none if it holds no store).
import { silentLogger } from '../log/logger.js';
import type { HistoryEntry } from '../store/history.js';
import type { ProxyConnectionRecord } from '../store/proxy-history.js';
import { Store, StoreError } from '../store/store.js';
import { openPostgres } from './store-options.js';

export async function printHistory(
  dataDir: string,
  limit: number,
  json: boolean,
  storeUrl?: string,
): Promise<void> {
  let changes: HistoryEntry[];
  let proxies: ProxyConnectionRecord[] = [];
  if (storeUrl) {
    const shared = await openPostgres(storeUrl, 'history');
    try {
      changes = await shared.recentHistory(limit);
    } finally {
      await shared.close();
    }
    try {
      const local = Store.open({ dataDir, logger: silentLogger, readonly: true });
      try {
        proxies = local.proxies.recent(limit);
      } finally {
        local.close();
      }
    } catch (err) {
      if (!(err instanceof StoreError)) throw err;
    }
  } else {
    const store = Store.open({ dataDir, logger: silentLogger, readonly: true });
    try {
      changes = store.history.recent(limit);
      proxies = store.proxies.recent(limit);
    } finally {
      store.close();
    }
  }
  {
    if (json) {
      process.stdout.write(`${JSON.stringify({ changes, proxies }, null, 2)}\n`);
      return;
    }
    process.stdout.write('Config changes and registry events (newest first)\n');
    printTable(
      ['at', 'source', 'subject', 'event', 'detail', 'replica'],
      changes.map((c) => [c.at, c.source, c.subject, c.event, c.detail, c.replica || '-']),
    );
    process.stdout.write('\nProxy connections (newest first)\n');
    printTable(
      ['node', 'peer', 'kind', 'connected', 'disconnected', 'NACKed types'],
      proxies.map((p) => [
        p.nodeId,
        p.peer,
        p.kind,
        p.connectedAt,
        p.disconnectedAt ?? '(open)',
        Object.keys(p.lastNacks).join(',') || '-',
      ]),
    );
  }
}

function printTable(header: readonly string[], rows: readonly (readonly string[])[]): void {
  if (rows.length === 0) {
    process.stdout.write('  (none)\n');
    return;
  }
  const clip = (s: string): string => (s.length > 80 ? `${s.slice(0, 77)}...` : s);
  const all = [header, ...rows.map((r) => r.map(clip))];
  const widths = header.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  for (const row of all)
    process.stdout.write(`  ${row.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ')}\n`);
}
