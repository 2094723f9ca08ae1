// The CA's named secrets and the log of issued certificates in PostgreSQL (the SQLite side is
// store/ca-material.ts). Creating missing material runs under a transaction-scoped advisory lock per
// name, so replicas starting at once create it once and all return that one value.
import type { IssuedCertificate } from '../ca-material.js';
import { decodeIssued, encodeIssued, type IssuedColumns } from '../row-codecs.js';
import type { SharedCaMaterial, SharedIssuanceLog } from '../shared-store.js';
import { touched, type PgDb } from './pg-db.js';

const SELECT_MATERIAL = 'SELECT value FROM ca_material WHERE name = $1';

export class PgCaMaterial implements SharedCaMaterial, SharedIssuanceLog {
  constructor(private readonly db: PgDb) {}

  async getMaterial(name: string): Promise<Buffer | undefined> {
    const res = await this.db.pool.query<{ value: Buffer }>(SELECT_MATERIAL, [name]);
    return res.rows[0]?.value;
  }

  async getOrCreateMaterial(name: string, create: () => Promise<Buffer>): Promise<Buffer> {
    const existing = await this.getMaterial(name);
    if (existing) return existing;
    return this.db.transaction(async (client) => {
      // One creator at a time per name; the others wait here, then find it made.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('portolan.ca_material.' || $1))", [name]);
      const stored = (await client.query<{ value: Buffer }>(SELECT_MATERIAL, [name])).rows[0]?.value;
      if (stored) return stored;
      const value = await create();
      await client.query('INSERT INTO ca_material (name, value, created_at) VALUES ($1, $2, $3)', [
        name,
        value,
        new Date().toISOString(),
      ]);
      return value;
    });
  }

  async replaceMaterial(name: string, expected: Buffer, value: Buffer): Promise<boolean> {
    const res = await this.db.pool.query(
      'UPDATE ca_material SET value = $1, created_at = $2 WHERE name = $3 AND value = $4',
      [value, new Date().toISOString(), name, expected],
    );
    return touched(res) > 0;
  }

  async recordIssued(cert: IssuedCertificate): Promise<void> {
    await this.db.pool.query(
      `INSERT INTO issued_certificates (serial, identity, node_id, enrollment_id, not_before, not_after, issued_at, replica)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [...encodeIssued(cert), this.db.replica],
    );
  }

  async issuedBySerial(serial: string): Promise<IssuedCertificate | undefined> {
    const hex = serial.toLowerCase().replace(/^0+(?=.)/, '');
    const res = await this.db.pool.query<IssuedColumns>(
      'SELECT * FROM issued_certificates WHERE serial IN ($1, $2)',
      [hex, `0${hex}`],
    );
    const row = res.rows[0];
    return row && decodeIssued(row);
  }
}
