// Services: search by hostname; each service's ports, the registry that owns it (and the ones it
// shadows), and its endpoints by locality with health.
import type { ServicezView } from '../../model/admin-api.js';
import { getJson } from '../api.js';
import { card, h, mono, pill, table } from '../dom.js';
import type { Page } from '../page.js';

export function servicesPage(): Page {
  const open = new Set<string>();
  const count = h('span', { class: 'muted' });
  const list = h('div', { class: 'services' });
  const search = h('input', {
    type: 'search',
    placeholder: 'Search hostnames…',
    'aria-label': 'search services',
    class: 'search',
  });
  let query = '';
  let pending: number | undefined;
  let update = async (): Promise<void> => {};
  search.addEventListener('input', () => {
    window.clearTimeout(pending);
    pending = window.setTimeout(() => {
      query = search.value;
      void update();
    }, 200);
  });
  update = async () => {
    const view = await getJson<ServicezView>(`/debug/servicez?q=${encodeURIComponent(query)}`);
    count.textContent = query ? `${view.matched} of ${view.total} services` : `${view.total} services`;
    list.replaceChildren(
      ...(view.services.length === 0 ? [h('p', { class: 'muted' }, 'no services match')] : []),
      ...view.services.map((s) => {
        const details = h(
          'details',
          { class: 'service', open: open.has(s.hostname) },
          h(
            'summary',
            null,
            h('span', { class: 'host' }, s.hostname),
            h(
              'span',
              { class: 'ports' },
              s.ports.map((p) => h('span', { class: 'port' }, `${p.number}/${p.protocol}`)),
            ),
            pill(s.registry, 'info'),
            s.shadowed.length ? pill(`also in ${s.shadowed.join(', ')}`, 'warn') : '',
            h(
              'span',
              { class: `health ${s.healthyCount < s.endpointCount ? 'partial' : ''}` },
              `${s.healthyCount}/${s.endpointCount} healthy`,
            ),
          ),
          h(
            'div',
            { class: 'service-body' },
            h(
              'p',
              { class: 'muted' },
              `namespace ${s.namespace} · ${s.resolution} · ${s.location} · owned by `,
              mono(s.registry),
              s.shadowed.length
                ? ` · its Service shadows the definitions in ${s.shadowed.join(', ')} (their endpoints are merged)`
                : '',
            ),
            table(
              ['port', 'name', 'protocol'],
              s.ports.map((p) => [p.number, p.name, p.protocol]),
            ),
            ...Object.entries(s.localities).map(([locality, endpoints]) =>
              h(
                'div',
                { class: 'locality' },
                h('h3', null, locality === '//' ? 'no locality' : locality.replace(/\/+$/, '')),
                table(
                  ['address', 'ports', 'health', 'weight', 'labels', 'registry'],
                  endpoints.map((e) => [
                    mono(e.address),
                    Object.entries(e.ports)
                      .map(([n, p]) => `${n}:${p}`)
                      .join(' '),
                    pill(e.health),
                    e.weight,
                    Object.entries(e.labels).map(([k, v]) => h('span', { class: 'label-chip' }, `${k}=${v}`)),
                    e.registry,
                  ]),
                ),
              ),
            ),
            Object.keys(s.localities).length === 0 ? h('p', { class: 'muted' }, 'no endpoints') : '',
          ),
        );
        details.addEventListener('toggle', () =>
          details.open ? open.add(s.hostname) : open.delete(s.hostname),
        );
        return details;
      }),
    );
  };
  return {
    title: 'Services',
    mount(root) {
      root.append(
        h('h1', null, 'Services'),
        card('Services', h('div', { class: 'toolbar' }, search, count), list),
      );
    },
    update: () => update(),
  };
}
