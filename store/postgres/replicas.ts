// Replica coordination on PostgreSQL (store/replicas.ts is the seam): heartbeats in a table every
// replica reads for /debug/replicas, and leadership of singleton jobs through advisory locks
// (leadership.ts).
import type { Leadership, ReplicaCoordination, ReplicaHeartbeat } from '../replicas.js';
import { leadJob } from './leadership.js';
import type { PgDb } from './pg-db.js';

const DAY_MS = 24 * 3600 * 1000;

export class PgReplicas implements ReplicaCoordination {
  constructor(private readonly db: PgDb) {}

  async heartbeat(startedAt: string, proxies: readonly string[], now = new Date()): Promise<void> {
    await this.db.pool.query(
      `INSERT INTO replicas (replica, started_at, heartbeat_at, proxies) VALUES ($1, $2, $3, $4)
       ON CONFLICT (replica) DO UPDATE SET started_at = $2, heartbeat_at = $3, proxies = $4`,
      [this.db.replica, startedAt, now.toISOString(), JSON.stringify(proxies)],
    );
    // Replicas gone for a day (each restart with the default HOST-PID id adds a row): forgotten.
    await this.db.pool.query('DELETE FROM replicas WHERE heartbeat_at < $1', [
      new Date(now.getTime() - DAY_MS).toISOString(),
    ]);
  }

  async listReplicas(): Promise<ReplicaHeartbeat[]> {
    const res = await this.db.pool.query<{
      replica: string;
      started_at: string;
      heartbeat_at: string;
      proxies: string;
    }>('SELECT * FROM replicas ORDER BY heartbeat_at DESC');
    return res.rows.map((r) => ({
      replica: r.replica,
      startedAt: r.started_at,
      heartbeatAt: r.heartbeat_at,
      proxies: JSON.parse(r.proxies) as string[],
    }));
  }

  lead(job: string, onChange: (leading: boolean) => void = () => undefined, retryMs = 2000): Leadership {
    return leadJob(this.db.url, this.db.replica, job, onChange, retryMs);
  }
}
