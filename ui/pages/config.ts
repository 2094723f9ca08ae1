// Config files: each file's status, its errors and warnings at file:line with the field path, the
// proxies whose NACK in force came from the file (beside it), conflicts between files, and what the
// clients cannot be given (per kind of client).
import type { ConfigIssue, ConfigzView, NackMarkView } from '../../model/admin-api.js';
import { ApiError, getJson } from '../api.js';
import { card, h, mono, pill, table } from '../dom.js';
import { ago } from '../format.js';
import type { Page } from '../page.js';

export function configPage(): Page {
  const body = h('div', { class: 'stack' });
  return {
    title: 'Config files',
    mount(root) {
      root.append(h('h1', null, 'Config files'), body);
    },
    async update() {
      let c: ConfigzView;
      try {
        c = await getJson<ConfigzView>('/debug/configz');
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) {
          body.replaceChildren(
            h('p', { class: 'muted' }, 'The config registry is not enabled (--registries config).'),
          );
          return;
        }
        throw err;
      }
      const broken = c.files.filter((f) => f.status === 'error');
      const rejected = new Set(c.nacks.map((n) => n.file));
      const issue = (f: string, i: ConfigIssue, kind: string): unknown[] => [
        mono(`${f}:${i.line}`),
        i.path ? mono(i.path) : '-',
        h('span', { class: kind === 'error' ? 'err' : 'warn-text' }, i.message),
      ];
      body.replaceChildren(
        h(
          'p',
          { class: 'lead' },
          'Watching ',
          mono(c.dir),
          ` — ${c.files.length} files, `,
          broken.length ? h('strong', { class: 'nack' }, `${broken.length} with errors`) : 'all valid',
          rejected.size ? [', ', h('strong', { class: 'nack' }, `${rejected.size} rejected by a proxy`)] : '',
          '. A file with errors keeps its last good version in force.',
        ),
        broken.length
          ? card(
              'Errors',
              table(
                ['file:line', 'field', 'message'],
                broken.flatMap((f) => f.errors.map((e) => issue(f.path, e, 'error') as never[])),
              ),
            )
          : '',
        card(
          'Files',
          table(
            ['file', 'status', 'resources', 'loaded', 'checked', 'warnings'],
            c.files.map((f) => [
              [mono(f.path), nackMarks(c.nacks.filter((n) => n.file === f.path))],
              pill(f.status),
              f.resources.length
                ? h('span', { class: 'resources' }, f.resources.join(', '))
                : h('span', { class: 'muted' }, 'none in force'),
              f.loadedAt ? ago(f.loadedAt) : h('span', { class: 'err' }, 'never'),
              ago(f.checkedAt),
              f.warnings.length || '-',
            ]),
            { empty: 'no files' },
          ),
        ),
        warnings(c),
        card(
          'What the clients cannot be given',
          h(
            'p',
            { class: 'muted' },
            'Config that is valid but that a kind of client cannot be sent; it is left out for those clients.',
          ),
          table(
            ['resource', 'field', 'clients', 'why'],
            c.limitations.map((l) => [
              mono(l.resource),
              mono(l.field),
              l.clients.map((k) => pill(k, 'info')),
              l.reason,
            ]),
            { empty: 'nothing: every client gets all of it' },
          ),
        ),
      );
    },
  };
}

function warnings(c: ConfigzView): HTMLElement | string {
  const fileWarnings = c.files.flatMap((f) =>
    f.warnings.map((w) => [
      mono(`${f.path}:${w.line}`),
      w.path ? mono(w.path) : '-',
      h('span', { class: 'warn-text' }, w.message),
    ]),
  );
  const cross = c.warnings.map((w) => [
    mono(`${w.resource.file}:${w.resource.line}`),
    mono(w.resource.resource),
    h('span', { class: 'warn-text' }, w.message),
  ]);
  const conflicts = c.conflicts.map((k) => [
    mono(`${k.ignored.file}:${k.ignored.line}`),
    mono(k.subject),
    h('span', { class: 'warn-text' }, `defined twice: ignored here, kept at ${k.kept.file}:${k.kept.line}`),
  ]);
  const rows = [...conflicts, ...cross, ...fileWarnings];
  if (rows.length === 0) return '';
  return card('Warnings and conflicts', table(['file:line', 'subject', 'message'], rows));
}

/** The NACKs in force that came from one file: who rejected what, with the client's message. */
function nackMarks(marks: readonly NackMarkView[]): HTMLElement | string {
  if (marks.length === 0) return '';
  return h(
    'div',
    { class: 'nack-marks' },
    marks.map((n) =>
      h(
        'div',
        { class: 'nack-mark' },
        pill('NACK'),
        ' ',
        mono(n.node),
        n.client
          ? h('span', { class: 'muted' }, ` (${n.client}${n.clientVersion ? ` ${n.clientVersion}` : ''})`)
          : '',
        ` rejected ${n.type}${n.name ? ` ${n.name}` : ''}: `,
        h('span', { class: 'err' }, n.message),
      ),
    ),
  );
}
