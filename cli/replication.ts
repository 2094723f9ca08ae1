// One replica among several (issue #20, docs/ha.md): where the CA keeps its state, this replica's
// heartbeat (with the proxies connected to it) for /debug/replicas, the store's health for /ready,
// and leadership of the singleton jobs (pruning). On SQLite there is one replica, its own leader;
// on PostgreSQL the state is shared, leadership is a lease (postgres/leadership.ts), and nothing
// here sits on the xDS push path: a dead database costs heartbeats and new enrollments, not pushes.
import { guardedCaStore, StoreHealth, type StoreState } from '../ca/ca-store.js';
import type { Logger } from '../log/logger.js';
import type { PostgresStore } from '../store/postgres/postgres-store.js';
import type { Leadership, ReplicaCoordination, ReplicaHeartbeat } from '../store/replicas.js';
import { SingleReplica } from '../store/single-replica.js';
import { SqliteSharedStore } from '../store/sqlite-shared.js';
import type { Store } from '../store/store.js';
import type { CaBacking } from './ca-serve.js';

export const HEARTBEAT_MS = 3000;
/** How often a follower tries to take a dead leader's lease. */
const LEADER_RETRY_MS = 2000;

export interface ReplicasView {
  readonly replica: string;
  readonly leader: boolean;
  readonly store: StoreState;
  readonly replicas: readonly ReplicaHeartbeat[];
  readonly error?: string;
}

export interface Replication {
  readonly replica: string;
  readonly backing: CaBacking;
  /** Whether this replica leads the singleton jobs now. */
  leads(): boolean;
  storeState(): StoreState;
  view(): Promise<ReplicasView>;
  stop(): Promise<void>;
}

export function startReplication(
  store: Store,
  shared: PostgresStore | undefined,
  replica: string,
  proxies: () => readonly string[],
  logger: Logger,
): Replication {
  const health = new StoreHealth(shared ? 'postgres' : 'sqlite', LEADER_RETRY_MS, (state) =>
    state.state === 'up'
      ? logger.info({ store: state }, 'shared store reachable again: enrollments and join tokens resume')
      : logger.error(
          { store: state },
          'shared store unreachable: serving xDS and renewing known workloads from memory; new enrollments refused',
        ),
  );
  const coordination: ReplicaCoordination = shared ?? new SingleReplica(replica);
  // One replica (SQLite) always leads: only a shared store's leadership is news worth a log line.
  const leadership: Leadership = coordination.lead(
    'singletons',
    (leading) => {
      if (shared)
        logger.info({ replica, leading }, leading ? 'leading the singleton jobs' : 'no longer leading');
    },
    LEADER_RETRY_MS,
  );
  const startedAt = new Date().toISOString();
  const beat = (): void => {
    health
      .run('heartbeat', () => coordination.heartbeat(startedAt, proxies()))
      .catch((err: unknown) => logger.debug({ err }, 'replica heartbeat failed'));
  };
  beat();
  const timer = setInterval(beat, HEARTBEAT_MS);
  timer.unref();
  const backing: CaBacking = shared
    ? { material: shared, store: guardedCaStore(shared, health), leads: () => leadership.isLeader() }
    : { material: store.ca, store: new SqliteSharedStore(store) };
  return {
    replica,
    backing,
    leads: () => leadership.isLeader(),
    storeState: () => health.state(),
    async view() {
      const base = { replica, leader: leadership.isLeader(), store: health.state() };
      try {
        return { ...base, replicas: await health.run('listing replicas', () => coordination.listReplicas()) };
      } catch (err) {
        return { ...base, replicas: [], error: (err as Error).message };
      }
    },
    async stop() {
      clearInterval(timer);
      await leadership.stop();
      await shared?.close().catch(() => undefined);
    },
  };
}
