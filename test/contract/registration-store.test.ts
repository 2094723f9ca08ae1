// The RegistrationStore contract (test/support/registration-store-contract.ts) against every
// implementation: in memory, the SQLite table (store/auto-registrations.ts, reopened on one data
// directory) and PostgreSQL (store/postgres/auto-registrations.ts, a real server, reopened under the
// same replica id).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { silentLogger } from '../../log/logger.js';
import type { RegistrationStore } from '../../registration/auto-registration.js';
import { PostgresRegistrations } from '../../store/postgres/auto-registrations.js';
import { PostgresStore } from '../../store/postgres/postgres-store.js';
import { Store } from '../../store/store.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { registrationStoreContract } from '../support/registration-store-contract.js';

/** The in-memory store: rows in a map that outlives each run (a stand-in for a process's memory). */
class MemoryRegistrationStore implements RegistrationStore {
  constructor(private readonly rows: Map<string, string>) {}
  all() {
    return [...this.rows].map(([key, value]) => ({ key, value }));
  }
  put(key: string, value: string) {
    this.rows.set(key, value);
  }
  delete(key: string) {
    this.rows.delete(key);
  }
}

registrationStoreContract({
  name: 'memory',
  async fresh() {
    const rows = new Map<string, string>();
    return { open: async () => new MemoryRegistrationStore(rows), close: async () => undefined };
  },
});

const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

registrationStoreContract({
  name: 'SQLite',
  async fresh() {
    const dataDir = mkdtempSync(join(tmpdir(), 'portolan-registrations-'));
    dirs.push(dataDir);
    const open = new Map<RegistrationStore, Store>();
    return {
      async open() {
        const store = Store.open({ dataDir, logger: silentLogger });
        open.set(store.autoRegistrations, store);
        return store.autoRegistrations;
      },
      async close(table) {
        open.get(table)?.close();
        open.delete(table);
      },
    };
  },
});

let server: PostgresServer | undefined;
let databases = 0;
after(async () => server?.destroy());

registrationStoreContract({
  name: 'PostgreSQL',
  async fresh() {
    server ??= await startPostgres();
    databases += 1;
    const url = await server.createDatabase(`registrations_${databases}`);
    const open = new Map<RegistrationStore, { rows: PostgresRegistrations; store: PostgresStore }>();
    return {
      async open() {
        const store = await PostgresStore.open({ url, replica: 'replica-a' });
        const held = await PostgresRegistrations.heldBy(store, 'replica-a', silentLogger);
        const rows = new PostgresRegistrations(store, 'replica-a', silentLogger, held);
        open.set(rows, { rows, store });
        return rows;
      },
      async close(rows) {
        const run = open.get(rows);
        open.delete(rows);
        await run?.rows.stop();
        await run?.store.close();
      },
    };
  },
});
