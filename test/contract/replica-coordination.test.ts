// The ReplicaCoordination contract (test/support/replica-coordination-contract.ts) against both
// implementations: one replica in memory beside SQLite, and PostgreSQL (a real server).
import { after } from 'node:test';
import { PostgresStore } from '../../store/postgres/postgres-store.js';
import { SingleReplica } from '../../store/single-replica.js';
import { startPostgres, type PostgresServer } from '../support/postgres.js';
import { replicaCoordinationContract } from '../support/replica-coordination-contract.js';

replicaCoordinationContract({
  name: 'single replica (SQLite)',
  fresh: async (replica) => new SingleReplica(replica),
});

let server: PostgresServer | undefined;
let databases = 0;
const opened: PostgresStore[] = [];
after(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
  await server?.destroy();
});

replicaCoordinationContract({
  name: 'PostgreSQL',
  async fresh(replica) {
    server ??= await startPostgres();
    databases += 1;
    const store = await PostgresStore.open({
      url: await server.createDatabase(`replicas_${databases}`),
      replica,
    });
    opened.push(store);
    return store;
  },
});
