// The CA: its roots and when they expire, the join tokens (never the secrets), certificates issued.
import type { CazView } from '../../model/admin-api.js';
import { ApiError, getJson } from '../api.js';
import { card, h, mono, pill, table } from '../dom.js';
import { ago, clock } from '../format.js';
import type { Page } from '../page.js';

const DAY = 24 * 3600 * 1000;

export function caPage(): Page {
  const body = h('div', { class: 'stack' });
  return {
    title: 'CA',
    mount(root) {
      root.append(h('h1', null, 'Certificate authority'), body);
    },
    async update() {
      let c: CazView;
      try {
        c = await getJson<CazView>('/debug/caz');
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) {
          body.replaceChildren(h('p', { class: 'muted' }, 'The built-in CA is not enabled in this server.'));
          return;
        }
        throw err;
      }
      const now = Date.now();
      body.replaceChildren(
        h(
          'p',
          { class: 'lead' },
          'Trust domain ',
          mono(c.trustDomain),
          c.plugin ? ' — a plug-in CA (cacerts directory).' : ' — roots kept in the store.',
        ),
        card(
          'Roots',
          table(
            ['subject', 'valid from', 'expires', 'sha-256'],
            c.roots.map((r) => {
              const left = Date.parse(r.notAfter) - now;
              return [
                mono(r.subject),
                clock(r.notBefore),
                h(
                  'span',
                  null,
                  clock(r.notAfter),
                  ' ',
                  pill(ago(r.notAfter), left < 30 * DAY ? 'bad' : left < 180 * DAY ? 'warn' : 'ok'),
                ),
                mono(`${r.sha256.slice(0, 16)}…`),
              ];
            }),
          ),
        ),
        card(
          'Join tokens',
          h(
            'p',
            { class: 'muted' },
            'Ids and identities only; the tokens themselves are never stored. Create and revoke with ',
            mono('portolan token'),
            '.',
          ),
          table(
            ['id', 'identity', 'state', 'uses left', 'expires', 'created'],
            c.joinTokens.map((t) => [
              mono(t.id),
              mono(t.identity),
              pill(t.state),
              t.usesLeft,
              ago(t.expiresAt),
              ago(t.createdAt),
            ]),
            { empty: 'no join tokens' },
          ),
        ),
        card(
          'Certificates issued',
          table(
            ['identity', 'node', 'issued', 'expires', 'serial'],
            c.issued.map((i) => [
              mono(i.identity),
              i.nodeId ?? '-',
              ago(i.issuedAt),
              ago(i.notAfter),
              mono(i.serial.slice(0, 16)),
            ]),
            { empty: 'none yet' },
          ),
        ),
      );
    },
  };
}
