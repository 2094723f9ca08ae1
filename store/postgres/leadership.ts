// Leadership of one singleton job on PostgreSQL: a session advisory lock held on a connection of
// its own. The server releases the lock when that connection ends — the leader exited, was killed,
// or lost the network — and the next replica to try (every `retryMs`) takes it.
import pg from 'pg';
import type { Leadership } from '../replicas.js';

export function leadJob(
  url: string,
  replica: string,
  job: string,
  onChange: (leading: boolean) => void,
  retryMs: number,
): Leadership {
  let client: pg.Client | undefined;
  let leading = false;
  let stopped = false;
  let attempt: Promise<void> | undefined;

  const setLeading = (value: boolean): void => {
    if (leading === value) return;
    leading = value;
    onChange(value);
  };

  const lost = (c: pg.Client): void => {
    if (client !== c) return;
    client = undefined;
    setLeading(false);
  };

  const tryOnce = async (): Promise<void> => {
    if (stopped) return;
    if (client) {
      // Still holding it? A query on the held connection fails when the server dropped it.
      try {
        await client.query('SELECT 1');
      } catch {
        const dead = client;
        lost(dead);
        await dead.end().catch(() => undefined);
      }
      return;
    }
    const c = new pg.Client({
      connectionString: url,
      application_name: `portolan ${replica} leader:${job}`,
      connectionTimeoutMillis: Math.max(retryMs, 1000),
      query_timeout: Math.max(retryMs, 1000) * 2,
    });
    c.on('error', () => lost(c));
    c.on('end', () => lost(c));
    try {
      await c.connect();
      const res = await c.query<{ ok: boolean }>(
        "SELECT pg_try_advisory_lock(hashtext('portolan.job.' || $1)) AS ok",
        [job],
      );
      if (res.rows[0]?.ok && !stopped) {
        client = c;
        setLeading(true);
        return;
      }
    } catch {
      // unreachable: not the leader; try again later
    }
    await c.end().catch(() => undefined);
  };

  const tick = (): void => {
    if (attempt) return;
    attempt = tryOnce().finally(() => (attempt = undefined));
  };
  tick();
  const timer = setInterval(tick, retryMs);
  timer.unref();

  return {
    isLeader: () => leading,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await attempt;
      const c = client;
      client = undefined;
      setLeading(false);
      await c?.end().catch(() => undefined);
    },
  };
}
