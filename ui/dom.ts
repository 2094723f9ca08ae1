// A few DOM helpers: elements from tag, attributes and children (text is always a text node, never
// HTML, so names from the mesh cannot inject markup), tables, and status pills.

export type Child = Node | string | number | null | undefined | false | readonly Child[];
type Attrs = Record<string, string | number | boolean | undefined | ((e: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (k === 'class') el.className = String(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el: Node, children: readonly Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c as readonly Child[]);
    else if (c instanceof Node) el.appendChild(c);
    else if (typeof c === 'string' || typeof c === 'number')
      el.appendChild(document.createTextNode(String(c)));
  }
}

/** A table with a header row; `empty` is shown in a single cell when there are no rows. */
export function table(
  headers: readonly string[],
  rows: readonly (readonly Child[])[],
  { empty = 'none', className = '' }: { empty?: string; className?: string } = {},
): HTMLTableElement {
  return h(
    'table',
    { class: `grid ${className}`.trim() },
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        headers.map((t) => h('th', null, t)),
      ),
    ),
    h(
      'tbody',
      null,
      rows.length === 0
        ? h('tr', null, h('td', { class: 'empty', colspan: headers.length }, empty))
        : rows.map((r) =>
            h(
              'tr',
              null,
              r.map((c) => h('td', null, c)),
            ),
          ),
    ),
  );
}

const PILL_CLASS: Readonly<Record<string, string>> = {
  SYNCED: 'ok',
  ok: 'ok',
  live: 'ok',
  HEALTHY: 'ok',
  ready: 'ok',
  synced: 'ok',
  STALE: 'warn',
  'NOT SENT': 'muted',
  DRAINING: 'warn',
  'used up': 'muted',
  expired: 'muted',
  restored: 'warn',
  stale: 'warn',
  'file rejected': 'warn',
  NACK: 'bad',
  error: 'bad',
  UNHEALTHY: 'bad',
  revoked: 'bad',
  'not ready': 'bad',
  failing: 'bad',
};

export function pill(text: string, kind?: string): HTMLSpanElement {
  return h('span', { class: `pill ${kind ?? PILL_CLASS[text] ?? 'muted'}` }, text);
}

export function card(title: string, ...children: Child[]): HTMLElement {
  return h('section', { class: 'card' }, h('h2', null, title), ...children);
}

export function mono(text: string): HTMLElement {
  return h('code', null, text);
}
