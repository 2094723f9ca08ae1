// The dashboard: a page per tab (hash routes), each refreshed every 2 s while the tab is visible —
// no reload, no framework. The header shows readiness from /debug/overviewz on every refresh.
import type { OverviewzView } from '../model/admin-api.js';
import { getJson } from './api.js';
import { h } from './dom.js';
import { clock } from './format.js';
import { caPage } from './pages/ca.js';
import { configPage } from './pages/config.js';
import { historyPage } from './pages/history.js';
import { overviewPage } from './pages/overview.js';
import { proxiesPage, proxyPage } from './pages/proxies.js';
import { servicesPage } from './pages/services.js';
import type { Page } from './page.js';

const REFRESH_MS = 2000;

const TABS: readonly {
  readonly route: string;
  readonly title: string;
  readonly page: (arg: string) => Page;
}[] = [
  { route: 'overview', title: 'Overview', page: overviewPage },
  { route: 'services', title: 'Services', page: servicesPage },
  { route: 'proxies', title: 'Proxies', page: (arg) => (arg ? proxyPage(arg) : proxiesPage()) },
  { route: 'config', title: 'Config files', page: configPage },
  { route: 'history', title: 'History', page: historyPage },
  { route: 'ca', title: 'CA', page: caPage },
];

let current: { page: Page; key: string } | undefined;
let timer: number | undefined;

function route(): { tab: (typeof TABS)[number]; arg: string } {
  const [name = 'overview', ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const tab = TABS.find((t) => t.route === name) ?? TABS[0];
  if (!tab) throw new Error('no tabs');
  return { tab, arg: rest.map(decodeURIComponent).join('/') };
}

function navigate(): void {
  const { tab, arg } = route();
  const nav = document.getElementById('nav');
  nav?.replaceChildren(
    ...TABS.map((t) => h('a', { href: `#/${t.route}`, class: t === tab ? 'active' : undefined }, t.title)),
  );
  const root = document.getElementById('page');
  if (!root) return;
  const key = `${tab.route}/${arg}`;
  if (current?.key === key) return;
  root.replaceChildren();
  // Until the page's first fetch answers, "Loading…" instead of empty cards (style.css).
  root.classList.add('loading');
  const page = tab.page(arg);
  current = { page, key };
  document.title = `${page.title} · Portolan`;
  page.mount(root);
  void refresh();
}

async function refresh(): Promise<void> {
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  const banner = document.getElementById('banner');
  const live = document.getElementById('live');
  try {
    const page = current?.page;
    const [overview] = await Promise.all([getJson<OverviewzView>('/debug/overviewz'), page?.update()]);
    header(overview);
    if (current?.page === page) document.getElementById('page')?.classList.remove('loading');
    if (banner) banner.hidden = true;
    live?.classList.remove('stalled');
    if (live) live.title = `updated ${clock(new Date().toISOString())}`;
  } catch (err) {
    if (banner) {
      banner.hidden = false;
      banner.textContent = `Portolan is not answering (${err instanceof Error ? err.message : String(err)}); retrying…`;
    }
    live?.classList.add('stalled');
  }
  // A tab hidden while this refresh was in flight stays quiet until it is shown again.
  if (!document.hidden) timer = window.setTimeout(() => void refresh(), REFRESH_MS);
}

function header(o: OverviewzView): void {
  const ready = document.getElementById('ready');
  if (!ready) return;
  ready.textContent = o.ready ? 'ready' : 'not ready';
  ready.className = `pill ${o.ready ? 'ok' : 'bad'}`;
  ready.title = o.detail;
}

document.addEventListener('visibilitychange', () => {
  if (!document.hidden) void refresh();
  else if (timer !== undefined) clearTimeout(timer);
});
window.addEventListener('hashchange', navigate);
navigate();
