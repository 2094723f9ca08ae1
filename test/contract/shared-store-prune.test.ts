// The SharedStore.prune contract (test/support/shared-store-prune-contract.ts) against SQLite (a
// data directory of its own per test) and PostgreSQL (a real server, a database per test).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { silentLogger } from '../../log/logger.js';
import { PostgresStore } from '../../store/postgres/postgres-store.js';
import type { SharedStore } from '../../store/shared-store.js';
import { SqliteSharedStore } from '../../store/sqlite-shared.js';
import { Store } from '../../store/store.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { sharedStorePruneContract } from '../support/shared-store-prune-contract.js';

const opened: SharedStore[] = [];
const dirs: string[] = [];
let server: PostgresServer | undefined;
let databases = 0;
after(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
  dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
  await server?.destroy();
});

sharedStorePruneContract({
  name: 'SQLite',
  async fresh() {
    const dataDir = mkdtempSync(join(tmpdir(), 'portolan-prune-'));
    dirs.push(dataDir);
    const store = new SqliteSharedStore(Store.open({ dataDir, logger: silentLogger }));
    opened.push(store);
    return store;
  },
});

sharedStorePruneContract({
  name: 'PostgreSQL',
  async fresh() {
    server ??= await startPostgres();
    databases += 1;
    const url = await server.createDatabase(`prune_${databases}`);
    const store = await PostgresStore.open({ url, replica: 'replica-a' });
    opened.push(store);
    return store;
  },
});
