// Overview: is it ready, are the registries in sync, how big is the mesh, are proxies in sync, what
// was pushed lately and how fast it converged, and what went wrong recently.
import type { OverviewzView, PushRecord, PushStatusView, RegistryStatus } from '../../model/admin-api.js';
import { getJson } from '../api.js';
import { pushChart } from '../chart.js';
import { card, h, mono, pill, table } from '../dom.js';
import { ago, clock, ms } from '../format.js';
import type { Page } from '../page.js';

export function overviewPage(): Page {
  const body = h('div', { class: 'stack' });
  return {
    title: 'Overview',
    mount(root) {
      root.append(h('h1', null, 'Overview'), body);
    },
    async update() {
      const [o, p] = await Promise.all([
        getJson<OverviewzView>('/debug/overviewz'),
        getJson<PushStatusView>('/debug/push_status'),
      ]);
      body.replaceChildren(
        h('div', { class: 'tiles' }, tiles(o)),
        h('div', { class: 'cols' }, registries(o), chartCard(p)),
        card('Recent pushes', pushTable(p.recent.slice(0, 8))),
        card(
          'Recent errors',
          table(
            ['when', 'source', 'subject', 'message'],
            o.recentErrors
              .slice(0, 15)
              .map((e) => [
                h('span', { title: e.at, class: 'nowrap' }, ago(e.at)),
                e.source,
                mono(e.subject),
                e.message,
              ]),
            { empty: 'no errors' },
          ),
        ),
      );
    },
  };
}

function tiles(o: OverviewzView): HTMLElement[] {
  const s = o.proxiesByState;
  const tile = (
    label: string,
    value: number,
    sub: string | HTMLElement,
    href: string,
    bad = false,
  ): HTMLElement =>
    h(
      'a',
      { class: `tile${bad ? ' bad' : ''}`, href },
      h('div', { class: 'value' }, String(value)),
      h('div', { class: 'label' }, label),
      h('div', { class: 'sub' }, sub),
    );
  const proxySub = h(
    'span',
    null,
    `${s.SYNCED} synced`,
    s.STALE ? ` · ${s.STALE} stale` : '',
    s['NOT SENT'] ? ` · ${s['NOT SENT']} not sent` : '',
    s.NACK ? h('strong', { class: 'nack' }, ` · ${s.NACK} NACK`) : '',
  );
  return [
    tile(
      'services',
      o.counts.services,
      `${o.registries.length} registr${o.registries.length === 1 ? 'y' : 'ies'}`,
      '#/services',
    ),
    tile('endpoints', o.counts.endpoints, 'across all services', '#/services'),
    tile('proxies', o.counts.proxies, proxySub, '#/proxies', s.NACK > 0),
    tile(
      'config files',
      o.counts.configFiles,
      o.counts.configFilesWithErrors ? `${o.counts.configFilesWithErrors} with errors` : 'all valid',
      '#/config',
      o.counts.configFilesWithErrors > 0,
    ),
    tile('pushes', o.pushes, 'since start', '#/history'),
  ];
}

/**
 * The config directory marks itself failing while a file is rejected, but it keeps serving that
 * file's last good version and every other file: "files rejected", not "stale" (the error column
 * and the config page name the file).
 */
export function registryState(s: RegistryStatus, name?: string): string {
  if (!s.synced) return 'syncing';
  if (s.restoredFrom) return 'restored';
  if (s.stale && name === 'config') return 'file rejected';
  if (s.stale) return 'stale';
  return 'synced';
}

function registries(o: OverviewzView): HTMLElement {
  return card(
    'Registries',
    table(
      ['registry', 'state', 'services', 'endpoints', 'last sync', 'last error'],
      o.registries.map((r) => [
        mono(r.name),
        pill(registryState(r.status, r.name)),
        r.status.services,
        r.status.endpoints,
        h(
          'span',
          { class: 'nowrap' },
          r.status.restoredFrom
            ? `stored snapshot of ${clock(r.status.restoredFrom)}`
            : ago(r.status.lastSyncAt),
        ),
        r.status.lastError
          ? h('span', { class: 'err clip', title: r.status.lastError }, r.status.lastError)
          : '-',
      ]),
    ),
  );
}

function chartCard(p: PushStatusView): HTMLElement {
  return card(
    'Pushes and convergence',
    pushChart(p.series),
    h(
      'p',
      { class: 'legend' },
      h('span', { class: 'key bar' }),
      `pushes per ${p.series.bucketSeconds} s`,
      h('span', { class: 'key conv' }),
      'slowest convergence (first change seen → last proxy sent)',
    ),
  );
}

export function triggerText(t: PushRecord['trigger']): string {
  const parts: string[] = [];
  if (t.registries.length) parts.push(t.registries.join(', '));
  if (t.files.length) parts.push(t.files.join(', '));
  if (t.hostnameCount > 0) {
    const more = t.hostnameCount - t.hostnames.length;
    parts.push(`${t.hostnames.join(', ')}${more > 0 ? ` +${more} more` : ''}`);
  }
  return parts.join(' · ') || 'full push';
}

export function pushTable(pushes: readonly PushRecord[]): HTMLTableElement {
  return table(
    ['#', 'generation', 'when', 'kind', 'trigger', 'proxies', 'responses', 'convergence'],
    pushes.map((p) => [
      p.round,
      // The config generation it pushed: what `portolan wait` and a NACK name.
      p.generation === undefined ? '-' : mono(`g${p.generation}`),
      h('span', { title: p.startedAt }, clock(p.startedAt)),
      pill(p.kind, 'info'),
      h('span', { class: 'trigger' }, triggerText(p.trigger)),
      p.proxies ?? '…',
      Object.entries(p.responses)
        .map(([t, n]) => `${t} ${n}`)
        .join(' · ') || '-',
      p.convergenceMs === null ? h('span', { class: 'muted' }, 'converging…') : ms(p.convergenceMs),
    ]),
    { empty: 'no pushes yet' },
  );
}
