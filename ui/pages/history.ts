// History: config changes, registry events and proxy connections on one timeline, newest first.
import type { HistoryzView, PushStatusView } from '../../model/admin-api.js';
import { getJson } from '../api.js';
import { card, h, mono, pill } from '../dom.js';
import { clock, duration } from '../format.js';
import type { Page } from '../page.js';
import { pushTable } from './overview.js';

interface Event {
  readonly at: string;
  readonly kind: 'config' | 'registry' | 'proxy';
  readonly subject: string;
  readonly what: string;
  readonly detail: string;
  readonly tone: string;
  /** A config row's config generation (the id its file step published). */
  readonly generation?: number;
}

export function historyPage(): Page {
  const filters = new Set(['config', 'registry', 'proxy']);
  const timeline = h('ol', { class: 'timeline' });
  const pushes = h('div');
  let last: HistoryzView | undefined;
  const toggles = h(
    'div',
    { class: 'toolbar' },
    ['config', 'registry', 'proxy'].map((k) => {
      const box = h('input', { type: 'checkbox', checked: true });
      box.addEventListener('change', () => {
        if (box.checked) filters.add(k);
        else filters.delete(k);
        if (last) draw(last);
      });
      return h(
        'label',
        { class: `toggle ${k}` },
        box,
        k === 'config' ? 'config files' : k === 'registry' ? 'registries' : 'proxies',
      );
    }),
  );
  const draw = (hz: HistoryzView): void => {
    const events = toEvents(hz).filter((e) => filters.has(e.kind));
    timeline.replaceChildren(
      ...(events.length === 0 ? [h('li', { class: 'muted' }, 'nothing recorded yet')] : []),
      ...events
        .slice(0, 200)
        .map((e) =>
          h(
            'li',
            { class: `event ${e.kind}` },
            h('span', { class: 'when', title: e.at }, clock(e.at)),
            h('span', { class: 'dot' }),
            h(
              'div',
              { class: 'what' },
              pill(e.what, e.tone),
              ' ',
              mono(e.subject),
              e.generation === undefined
                ? ''
                : h('span', { class: 'muted', title: 'config generation' }, ` · g${e.generation}`),
              e.detail ? h('div', { class: 'detail' }, e.detail) : '',
            ),
          ),
        ),
    );
  };
  return {
    title: 'History',
    mount(root) {
      root.append(
        h('h1', null, 'History'),
        card('Recent pushes', pushes),
        card('Timeline', toggles, timeline),
      );
    },
    async update() {
      const [hz, p] = await Promise.all([
        getJson<HistoryzView>('/debug/historyz?limit=200'),
        getJson<PushStatusView>('/debug/push_status'),
      ]);
      last = hz;
      pushes.replaceChildren(pushTable(p.recent.slice(0, 15)));
      draw(hz);
    },
  };
}

function toEvents(hz: HistoryzView): Event[] {
  const tone: Readonly<Record<string, string>> = {
    accepted: 'ok',
    synced: 'ok',
    rejected: 'bad',
    failed: 'bad',
    removed: 'muted',
    restored: 'warn',
  };
  const out: Event[] = hz.changes.map((c) => ({
    at: c.at,
    kind: c.source === 'config' ? 'config' : 'registry',
    subject: c.subject,
    what: c.event,
    detail: readable(c.detail),
    tone: tone[c.event] ?? 'info',
    ...(typeof c.generation === 'number' && { generation: c.generation }),
  }));
  for (const p of hz.proxies) {
    out.push({
      at: p.connectedAt,
      kind: 'proxy',
      subject: p.nodeId,
      what: 'connected',
      detail: `${p.kind} from ${p.peer}`,
      tone: 'ok',
    });
    if (p.disconnectedAt) {
      const nacked = Object.keys(p.lastNacks);
      out.push({
        at: p.disconnectedAt,
        kind: 'proxy',
        subject: p.nodeId,
        what: 'disconnected',
        detail: `after ${duration(Date.parse(p.disconnectedAt) - Date.parse(p.connectedAt))}${nacked.length ? ` · NACKed ${nacked.join(', ')}` : ''}`,
        tone: nacked.length ? 'bad' : 'muted',
      });
    }
  }
  return out.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
}

// The store keeps an accepted file's resources as a JSON list: shown as a plain list.
function readable(detail: string): string {
  if (!detail.startsWith('[')) return detail;
  try {
    const list = JSON.parse(detail) as unknown;
    return Array.isArray(list) ? list.map(String).join(', ') : detail;
  } catch {
    return detail;
  }
}
