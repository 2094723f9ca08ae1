// GET /debug/caz: the built-in CA at a glance — its roots and their expiry, the join tokens (ids,
// identities, state, uses left; never a token or its hash) and the newest certificates issued.
import { createHash } from 'node:crypto';
import type { CertificateAuthority } from '../ca/authority.js';
import { joinTokenState } from '../ca/join-tokens.js';
import type { CazView } from '../model/admin-api.js';
import type { Store } from '../store/store.js';

export type { CazView } from '../model/admin-api.js';

export function caz(ca: CertificateAuthority, store: Store, limit = 100): CazView {
  const now = ca.now();
  return {
    trustDomain: ca.trustDomain,
    plugin: ca.isPlugin,
    roots: ca.trustedRoots(now).map((c) => ({
      subject: c.subject,
      serial: c.serialNumber,
      notBefore: c.notBefore.toISOString(),
      notAfter: c.notAfter.toISOString(),
      sha256: createHash('sha256').update(Buffer.from(c.rawData)).digest('hex'),
    })),
    joinTokens: store.joinTokens
      .list()
      .slice(0, limit)
      .map((t) => ({
        id: t.id,
        identity: t.identity,
        state: joinTokenState(t, now),
        usesLeft: t.usesLeft,
        expiresAt: t.expiresAt,
        createdAt: t.createdAt,
        revokedAt: t.revokedAt,
      })),
    issued: store.ca.issued(limit),
  };
}
