// Coordination for the embedded SQLite store: one replica, which leads every job and is the only
// one in /debug/replicas. Kept in memory: there is nobody to share it with.
import type { Leadership, ReplicaCoordination, ReplicaHeartbeat } from './replicas.js';

export class SingleReplica implements ReplicaCoordination {
  private last: ReplicaHeartbeat | undefined;

  constructor(private readonly replica: string) {}

  async heartbeat(startedAt: string, proxies: readonly string[], now = new Date()): Promise<void> {
    this.last = { replica: this.replica, startedAt, heartbeatAt: now.toISOString(), proxies: [...proxies] };
  }

  async listReplicas(): Promise<ReplicaHeartbeat[]> {
    return this.last ? [this.last] : [];
  }

  lead(_job: string, onChange?: (leading: boolean) => void): Leadership {
    let leading = true;
    onChange?.(true);
    return {
      isLeader: () => leading,
      async stop() {
        if (!leading) return;
        leading = false;
        onChange?.(false);
      },
    };
  }
}
