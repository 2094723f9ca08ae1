// Auto-registered VMs in PostgreSQL (issue #20, docs/ha.md): the registrations this replica holds are
// written through to the shared table, and the others' are read back on a short poll, so a VM that
// registered through one replica is an entry on every replica. Writes are queued in order and never
// awaited by the caller (the ADS stream that connected the agent does not wait on the database);
// a failed write is logged and the poll's next read shows the truth. The leader runs the grace
// cleanup for replicas that died (their own timers died with them).
import type { Logger } from '../../log/logger.js';
import type { PostgresStore } from './postgres-store.js';

/** Writes waiting at most: beyond it (a database far behind) new ones are dropped and logged. */
const MAX_QUEUED = 10_000;

export interface SharedRow {
  readonly key: string;
  readonly value: string;
  readonly replica: string;
}

export class PostgresRegistrations {
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /**
   * `held`: the rows this replica held when it last ran under the same id (heldBy, read at start),
   * which `all()` hands to the restore like SQLite's table; the other replicas' rows arrive
   * through `watch`.
   */
  constructor(
    private readonly store: PostgresStore,
    private readonly replica: string,
    private readonly logger: Logger,
    private readonly held: readonly { key: string; value: string }[] = [],
  ) {}

  /**
   * The rows stored under `replica` (by an earlier run with that id); empty, with a warning, when
   * the shared store cannot be read (the registrations then come back as their agents reconnect).
   */
  static async heldBy(store: PostgresStore, replica: string, logger: Logger): Promise<SharedRow[]> {
    try {
      return (await store.autoRegistrations.list()).filter((row) => row.replica === replica);
    } catch (err) {
      logger.warn(
        { err },
        'auto-registration: reading the stored registrations failed; starting without them',
      );
      return [];
    }
  }

  /** What this replica held when it last ran (the restore's input). */
  all(): { key: string; value: string }[] {
    return this.held.map(({ key, value }) => ({ key, value }));
  }

  put(key: string, value: string): void {
    this.enqueue(`auto-registration ${key}`, () => this.store.autoRegistrations.put(key, value));
  }

  delete(key: string): void {
    this.enqueue(`auto-registration ${key}`, () => this.store.autoRegistrations.delete(key));
  }

  /**
   * Every `pollMs`: the rows other replicas own go to `onRows`; on the leader (`leads`), rows of
   * replicas gone for `graceMs` are deleted. A failed read keeps the last rows.
   */
  watch(
    onRows: (rows: readonly SharedRow[]) => void,
    options: {
      readonly pollMs: number;
      readonly graceMs: number;
      /** How often replicas write their heartbeat (cli/replication.ts). */
      readonly heartbeatMs: number;
      readonly leads: () => boolean;
    },
  ): void {
    const tick = async (): Promise<void> => {
      try {
        if (options.leads()) {
          // The grace counts from when the replica was last alive: its last heartbeat, a period on.
          const expired = await this.store.autoRegistrations.expire(options.graceMs + options.heartbeatMs);
          if (expired > 0)
            this.logger.info(
              { expired },
              'auto-registration: removed entries of replicas gone past the grace',
            );
        }
        const rows = await this.store.autoRegistrations.list();
        if (!this.stopped) onRows(rows.filter((r) => r.replica !== this.replica));
      } catch (err) {
        this.logger.debug({ err }, 'auto-registration: reading the shared registrations failed');
      }
    };
    const loop = (): void => {
      void tick().finally(() => {
        if (!this.stopped) this.timer = setTimeout(loop, options.pollMs).unref();
      });
    };
    loop();
  }

  /** Stops polling; queued writes still finish (a registration removed at shutdown is removed). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.queue;
  }

  private enqueue(what: string, write: () => Promise<void>): void {
    if (this.queued >= MAX_QUEUED) {
      this.logger.warn({ what }, 'auto-registration: too many writes waiting for the shared store; dropped');
      return;
    }
    this.queued += 1;
    this.queue = this.queue
      .then(write)
      .catch((err: unknown) =>
        this.logger.warn({ err, what }, 'auto-registration: shared store write failed'),
      )
      .finally(() => {
        this.queued -= 1;
      });
  }
}
