// The ReplicaCoordination contract (store/replicas.ts), run against the one-replica SQLite side
// (store/single-replica.ts) and PostgreSQL (store/postgres/replicas.ts): a heartbeat lists this
// replica with its proxies, a newer one replaces it, and a lone replica leads a job until it stops.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ReplicaCoordination } from '../../store/replicas.js';
import { eventually } from './eventually.js';

export interface ReplicaCoordinationSubject {
  readonly name: string;
  /** A lone replica named `replica` over fresh storage (released by the subject's own `after`). */
  fresh(replica: string): Promise<ReplicaCoordination>;
}

const STARTED = '2026-05-01T00:00:00.000Z';
const at = (s: number): Date => new Date(Date.parse(STARTED) + s * 1000);

export function replicaCoordinationContract(subject: ReplicaCoordinationSubject): void {
  describe(`ReplicaCoordination contract: ${subject.name}`, () => {
    test('before a heartbeat no replica is listed', async () => {
      const c = await subject.fresh('replica-a');
      assert.deepEqual(await c.listReplicas(), []);
    });

    test('a heartbeat lists the replica with its start, time and proxies; a newer one replaces it', async () => {
      const c = await subject.fresh('replica-a');
      await c.heartbeat(STARTED, ['vm-1', 'vm-2'], at(1));
      assert.deepEqual(await c.listReplicas(), [
        {
          replica: 'replica-a',
          startedAt: STARTED,
          heartbeatAt: at(1).toISOString(),
          proxies: ['vm-1', 'vm-2'],
        },
      ]);
      await c.heartbeat(STARTED, ['vm-2'], at(2));
      assert.deepEqual(await c.listReplicas(), [
        { replica: 'replica-a', startedAt: STARTED, heartbeatAt: at(2).toISOString(), proxies: ['vm-2'] },
      ]);
    });

    test('a lone replica comes to lead a job, is told so, and gives it up when it stops', async () => {
      const c = await subject.fresh('replica-a');
      const told: boolean[] = [];
      const leadership = c.lead('prune', (leading) => told.push(leading), 100);
      try {
        await eventually(() => leadership.isLeader(), { timeoutMs: 5000, what: 'leadership of prune' });
        assert.deepEqual(told, [true]);
      } finally {
        await leadership.stop();
      }
      assert.equal(leadership.isLeader(), false);
      assert.deepEqual(told, [true, false]);
    });

    test('leading one job does not stand in the way of another', async () => {
      const c = await subject.fresh('replica-a');
      const jobs = [c.lead('prune', undefined, 100), c.lead('retire-roots', undefined, 100)];
      try {
        await eventually(() => jobs.every((j) => j.isLeader()), { timeoutMs: 5000, what: 'both jobs led' });
      } finally {
        await Promise.all(jobs.map((j) => j.stop()));
      }
    });
  });
}
