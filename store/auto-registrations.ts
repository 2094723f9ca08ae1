// The VMs registered through their agents (registration/auto-registration.ts), one row per entry,
// so a control-plane restart keeps them until their agents reconnect or the grace passes. The
// registration is opaque JSON here: the store does not know the registration model.
import type Database from 'better-sqlite3';
import type { GuardWrite } from './snapshots.js';

export class AutoRegistrationTable {
  constructor(
    private readonly db: Database.Database,
    private readonly guard: GuardWrite,
  ) {}

  all(): { key: string; value: string }[] {
    return this.db
      .prepare<[], { key: string; value: string }>(
        'SELECT key, registration AS value FROM auto_registrations ORDER BY key',
      )
      .all();
  }

  put(key: string, value: string): void {
    this.guard(`auto-registration ${key}`, () =>
      this.db
        .prepare(
          `INSERT INTO auto_registrations (key, registration, updated_at) VALUES (?, ?, ?)
           ON CONFLICT (key) DO UPDATE SET registration = excluded.registration, updated_at = excluded.updated_at`,
        )
        .run(key, value, new Date().toISOString()),
    );
  }

  delete(key: string): void {
    this.guard(`auto-registration ${key}`, () =>
      this.db.prepare('DELETE FROM auto_registrations WHERE key = ?').run(key),
    );
  }
}
