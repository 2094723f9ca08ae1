// Proxies: the proxy-status table, live; and one proxy — its sync state per type, its NACKs, and what
// it was sent (clusters, listeners, routes, endpoints).
import type {
  NackRecord,
  ProxyConfigzView,
  ProxySync,
  PushStatusView,
  SynczView,
  TypeSync,
} from '../../model/admin-api.js';
import { getJson } from '../api.js';
import { card, h, mono, pill, table } from '../dom.js';
import { ago, clock, duration } from '../format.js';
import type { Page } from '../page.js';

const TYPES = ['CDS', 'LDS', 'EDS', 'RDS'];
const KINDS: Readonly<Record<string, string>> = {
  grpc: 'gRPC',
  sidecar: 'Envoy sidecar',
  gateway: 'gateway',
};

export function stateCell(t: TypeSync | undefined): HTMLElement | string {
  if (!t) return h('span', { class: 'muted', title: 'not subscribed' }, '-');
  const label = t.state === 'STALE' && t.sinceSentMs !== null ? `STALE ${duration(t.sinceSentMs)}` : t.state;
  const el = pill(label, { SYNCED: 'ok', STALE: 'warn', NACK: 'bad', 'NOT SENT': 'muted' }[t.state]);
  if (t.lastNack) el.title = t.lastNack.message;
  return el;
}

export function proxiesPage(): Page {
  const summary = h('p', { class: 'lead' });
  const body = h('div');
  return {
    title: 'Proxies',
    mount(root) {
      root.append(h('h1', null, 'Proxies'), summary, card('Connected proxies', body));
    },
    async update() {
      const view = await getJson<SynczView>('/debug/syncz');
      const nacking = view.proxies.filter((p) => p.state === 'NACK').length;
      summary.replaceChildren(
        `${view.proxies.length} connected`,
        nacking ? h('strong', { class: 'nack' }, ` · ${nacking} NACKing`) : ' · none NACKing',
        ' — the same table as ',
        mono('portolan proxy-status'),
        '.',
      );
      body.replaceChildren(
        table(
          ['proxy', 'kind', 'API', ...TYPES, 'peer', 'connected'],
          view.proxies.map((p) => [
            h('a', { href: `#/proxies/${encodeURIComponent(p.node)}`, class: 'id' }, p.node),
            KINDS[p.proxyType] ?? p.proxyType,
            p.api === 'sotw' ? 'SotW' : p.api,
            ...TYPES.map((t) => stateCell(p.types[t])),
            mono(p.peer),
            h('span', { title: p.connectedAt }, ago(p.connectedAt)),
          ]),
          { empty: 'no proxies connected', className: 'proxies' },
        ),
      );
    },
  };
}

export function proxyPage(id: string): Page {
  const body = h('div', { class: 'stack' });
  return {
    title: id,
    mount(root) {
      root.append(
        h('p', { class: 'crumbs' }, h('a', { href: '#/proxies' }, 'Proxies'), ' / ', mono(id)),
        h('h1', null, id),
        body,
      );
    },
    async update() {
      const q = `?proxyID=${encodeURIComponent(id)}`;
      const [sync, config, pushes] = await Promise.all([
        getJson<SynczView>(`/debug/syncz${q}`).catch(() => undefined),
        getJson<ProxyConfigzView>(`/debug/proxy_configz${q}`).catch(() => undefined),
        getJson<PushStatusView>('/debug/push_status').catch(() => undefined),
      ]);
      const p = sync?.proxies[0];
      if (!p || !config) {
        body.replaceChildren(h('p', { class: 'banner-inline' }, `${id} is not connected.`));
        return;
      }
      body.replaceChildren(
        h('div', { class: 'cols' }, identity(p), types(p)),
        nacks(p, pushes?.nacks.filter((n) => n.node === id) ?? []),
        card(
          `Clusters (${config.clusters.length})`,
          table(
            ['name', 'service', 'port', 'subset', 'type', 'lb'],
            config.clusters.map((c) => [
              mono(c.name),
              c.service || '-',
              c.port ?? '-',
              c.subset || '-',
              c.type,
              c.lb,
            ]),
          ),
        ),
        card(
          `Listeners (${config.listeners.length})`,
          table(
            ['name', 'address', 'port', 'destination'],
            config.listeners.map((l) => [
              mono(l.name),
              l.address ?? 'api listener',
              l.port ?? '-',
              l.destination || '-',
            ]),
          ),
        ),
        card(
          `Routes (${config.routes.length})`,
          table(
            ['route config', 'virtual host', 'domains', 'match', 'destination'],
            config.routes.map((r) => [
              mono(r.name),
              r.virtualHost,
              r.domains.join(', '),
              mono(r.match),
              r.destination || '-',
            ]),
          ),
        ),
        card(
          `Endpoints (${config.endpoints.length})`,
          table(
            ['endpoint', 'health', 'weight', 'locality', 'priority', 'cluster'],
            config.endpoints.map((e) => [
              mono(`${e.address}:${e.port}`),
              pill(e.health),
              e.weight,
              e.locality || '-',
              e.priority,
              mono(e.cluster),
            ]),
          ),
        ),
      );
    },
  };
}

function identity(p: ProxySync): HTMLElement {
  const row = (k: string, v: string | HTMLElement): HTMLElement =>
    h('div', { class: 'kv' }, h('span', null, k), h('span', null, v));
  return card(
    'Proxy',
    row('kind', `${KINDS[p.proxyType] ?? p.proxyType} (${p.kind})`),
    row('API', p.api === 'sotw' ? 'state of the world' : 'delta (incremental)'),
    row('peer', mono(p.peer)),
    row('connection', mono(p.connection)),
    row('connected', `${clock(p.connectedAt)} (${ago(p.connectedAt)})`),
    row('state', pill(p.state)),
  );
}

function types(p: ProxySync): HTMLElement {
  return card(
    'Sync per type',
    table(
      ['type', 'state', 'sent', 'acked'],
      Object.entries(p.types).map(([t, s]) => [
        t,
        stateCell(s),
        s.sentVersion
          ? h('span', { title: s.sentAt ?? '' }, mono(s.sentVersion.slice(0, 12)), ` ${ago(s.sentAt)}`)
          : '-',
        s.ackedVersion
          ? h('span', { title: s.ackedAt ?? '' }, mono(s.ackedVersion.slice(0, 12)), ` ${ago(s.ackedAt)}`)
          : '-',
      ]),
    ),
  );
}

function nacks(p: ProxySync, recent: readonly NackRecord[]): HTMLElement {
  const inForce = Object.entries(p.types).flatMap(([t, s]) =>
    s.lastNack
      ? [
          {
            type: t,
            at: s.lastNack.at,
            code: s.lastNack.code,
            message: s.lastNack.message,
            current: s.state === 'NACK',
          },
        ]
      : [],
  );
  const rows = [
    ...inForce.map((n) => [
      n.type,
      h('span', { title: n.at }, ago(n.at)),
      n.code,
      h('span', { class: 'err' }, n.message),
      n.current ? pill('NACK') : pill('replaced', 'muted'),
    ]),
    ...recent
      .filter((r) => !inForce.some((n) => n.type === r.type && n.at === r.at))
      .map((r) => [
        r.type,
        h('span', { title: r.at }, ago(r.at)),
        r.code,
        h('span', { class: 'err' }, r.message),
        pill('earlier', 'muted'),
      ]),
  ];
  return card('NACKs', table(['type', 'when', 'code', 'message', ''], rows, { empty: 'no NACKs' }));
}
