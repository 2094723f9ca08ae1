// How a replica hears that another changed the deny list: LISTEN on a channel of a connection of its
// own (a notification arrives at the writer's commit), with a poll of the revision as the backstop
// that catches what a notification missed while the listener was reconnecting.
import pg from 'pg';
import type { PgDb } from './pg-db.js';

/** The channel a revocation is announced on (delivered at commit, to every replica listening). */
export const REVOCATION_CHANNEL = 'portolan_revocations';

export function watchRevocations(
  db: PgDb,
  revision: () => Promise<number>,
  onChange: () => void,
  pollMs: number,
): () => void {
  let stopped = false;
  let listener: pg.Client | undefined;
  let seen: number | undefined;
  let unreachable = false;
  const poll = async (): Promise<void> => {
    try {
      const now = await revision();
      // Back from an outage: anything may have changed meanwhile (even before a first baseline).
      if ((seen !== undefined && now !== seen) || unreachable) onChange();
      seen = now;
      unreachable = false;
    } catch {
      // the database is unreachable: what this replica has seen still applies; try again later
      unreachable = true;
    }
  };
  const listen = async (): Promise<void> => {
    if (stopped || listener) return;
    const client = new pg.Client({
      connectionString: db.url,
      application_name: `portolan ${db.replica} listen`,
    });
    client.on('error', () => undefined);
    client.on('end', () => {
      if (listener === client) listener = undefined;
    });
    client.on('notification', () => void poll());
    try {
      await client.connect();
      await client.query(`LISTEN ${REVOCATION_CHANNEL}`);
      if (stopped) await client.end();
      else listener = client;
    } catch {
      await client.end().catch(() => undefined);
    }
  };
  void poll();
  void listen();
  const timer = setInterval(() => {
    void poll();
    void listen();
  }, pollMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
    void listener?.end().catch(() => undefined);
    listener = undefined;
  };
}
