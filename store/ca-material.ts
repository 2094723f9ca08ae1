// Storage for the built-in CA (the CA issue builds on it): named secrets such as the root key and
// certificate, and a log of issued certificates. The database file is 0600.
import type Database from 'better-sqlite3';
import type { GuardWrite } from './snapshots.js';

export interface IssuedCertificate {
  readonly serial: string;
  readonly identity: string;
  readonly nodeId: string | null;
  readonly notBefore: string;
  readonly notAfter: string;
  readonly issuedAt: string;
}

export class CaMaterialTable {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
  ) {}

  put(name: string, value: Buffer): boolean {
    return (
      this.guard(`CA material ${name}`, () => {
        this.db
          .prepare(
            `INSERT INTO ca_material (name, value, created_at) VALUES (?, ?, ?)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`,
          )
          .run(name, value, new Date().toISOString());
        return true;
      }) ?? false
    );
  }

  get(name: string): Buffer | undefined {
    return this.db
      .prepare<[string], { value: Buffer }>('SELECT value FROM ca_material WHERE name = ?')
      .get(name)?.value;
  }

  recordIssued(cert: IssuedCertificate): void {
    this.guard(`issued certificate ${cert.serial}`, () =>
      this.db
        .prepare(
          `INSERT INTO issued_certificates (serial, identity, node_id, not_before, not_after, issued_at)
           VALUES (?, ?, ?, ?, ?, ?)`,
        )
        .run(cert.serial, cert.identity, cert.nodeId, cert.notBefore, cert.notAfter, cert.issuedAt),
    );
  }

  issued(limit = 100): IssuedCertificate[] {
    return this.db
      .prepare<
        [number],
        {
          serial: string;
          identity: string;
          node_id: string | null;
          not_before: string;
          not_after: string;
          issued_at: string;
        }
      >('SELECT * FROM issued_certificates ORDER BY issued_at DESC LIMIT ?')
      .all(limit)
      .map((r) => ({
        serial: r.serial,
        identity: r.identity,
        nodeId: r.node_id,
        notBefore: r.not_before,
        notAfter: r.not_after,
        issuedAt: r.issued_at,
      }));
  }
}
