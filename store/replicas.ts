// Coordination between control-plane replicas (issue #20): heartbeats, for /debug/replicas, and
// leadership of singleton jobs (root retirement, pruning, grace-period cleanup), so that one replica
// runs each. One replica on SQLite is trivially its own leader (single-replica.ts); on PostgreSQL
// (postgres/leadership.ts) leadership is a session advisory lock, released by the server when the
// leader's connection dies, and taken by another replica at its next attempt.

export interface ReplicaHeartbeat {
  readonly replica: string;
  readonly startedAt: string;
  readonly heartbeatAt: string;
  /** Proxies connected to that replica at its last heartbeat. */
  readonly proxies: readonly string[];
}

export interface Leadership {
  /** Whether this replica currently leads the job. */
  isLeader(): boolean;
  /** Stops trying, and gives leadership up. */
  stop(): Promise<void>;
}

export interface ReplicaCoordination {
  /** Records this replica's heartbeat and the proxies connected to it. */
  heartbeat(startedAt: string, proxies: readonly string[], now?: Date): Promise<void>;
  /** Every replica seen, newest heartbeat first. */
  listReplicas(): Promise<ReplicaHeartbeat[]>;
  /**
   * Competes for leadership of `job`, trying again every `retryMs` (so a dead leader's job is taken
   * over within about that long); `onChange` is told each time this replica gains or loses it.
   */
  lead(job: string, onChange?: (leading: boolean) => void, retryMs?: number): Leadership;
}
