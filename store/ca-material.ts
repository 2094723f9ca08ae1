// Storage for the built-in CA: named secrets such as the root key and certificate, and the log of
// issued certificates, which is also how a renewal finds the enrollment its certificate belongs to
// (store/enrollments.ts). The log keeps the newest `--history-limit` rows like the history tables,
// and beyond them every certificate that has not expired yet. The database file is 0600.
import type { IssuedCertificateView } from '../model/admin-api.js';
import type Database from 'better-sqlite3';
import type { GuardWrite } from './snapshots.js';
import { decodeIssued, encodeIssued, type IssuedColumns } from './row-codecs.js';

const PRUNE_EVERY = 100;

/** A certificate the CA issued, as /debug/caz shows it (one definition: model/admin-api.ts). */
export type IssuedCertificate = IssuedCertificateView;

export class CaMaterialTable {
  private inserts = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
    private readonly historyLimit = 10_000,
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

  /**
   * Writes `value` only if nothing is stored under `name` yet; returns what is stored afterwards. Two
   * processes creating the first root at once both end up with the one that was written first.
   */
  putIfAbsent(name: string, value: Buffer): Buffer | undefined {
    this.guard(`CA material ${name}`, () =>
      this.db
        .prepare(
          'INSERT INTO ca_material (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING',
        )
        .run(name, value, new Date().toISOString()),
    );
    return this.get(name);
  }

  /** Replaces the value only if it is still `expected` (nobody changed it meanwhile); returns whether it did. */
  replace(name: string, expected: Buffer, value: Buffer): boolean {
    return (
      this.guard(`CA material ${name}`, () => {
        const res = this.db
          .prepare('UPDATE ca_material SET value = ?, created_at = ? WHERE name = ? AND value = ?')
          .run(value, new Date().toISOString(), name, expected);
        return res.changes > 0;
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
      this.db.transaction(() => {
        this.db
          .prepare(
            `INSERT INTO issued_certificates (serial, identity, node_id, enrollment_id, not_before, not_after, issued_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(...encodeIssued(cert));
        if (++this.inserts % PRUNE_EVERY === 0) this.prune(new Date());
      })(),
    );
  }

  /** Deletes entries beyond the newest `historyLimit` whose certificate has expired. */
  prune(now: Date): number {
    return this.db
      .prepare(
        `DELETE FROM issued_certificates
         WHERE id <= (SELECT MAX(id) FROM issued_certificates) - ? AND not_after < ?`,
      )
      .run(this.historyLimit, now.toISOString()).changes;
  }

  /** The log entry of one certificate (serial in lower-case hex), while it is kept. */
  issuedBySerial(serial: string): IssuedCertificate | undefined {
    const hex = serial.toLowerCase().replace(/^0+(?=.)/, '');
    const row = this.db
      .prepare<[string, string], IssuedColumns>('SELECT * FROM issued_certificates WHERE serial IN (?, ?)')
      .get(hex, `0${hex}`);
    return row && decodeIssued(row);
  }

  issued(limit = 100): IssuedCertificate[] {
    return this.db
      .prepare<[number], IssuedColumns>('SELECT * FROM issued_certificates ORDER BY id DESC LIMIT ?')
      .all(limit)
      .map(decodeIssued);
  }
}
