// One rule for the registries over a live source (Consul, ZooKeeper): a service whose every endpoint
// vanishes at once, while the source may be answering in part — Consul listing the service yet
// returning no instance of it, ZooKeeper just reconnected (the fleet's ephemeral nodes expired
// with their sessions, or not yet re-registered) — keeps its last endpoints, marked stale, for a
// bounded time (`holdMs`). Endpoints that come back end the hold at once; when the hold runs out,
// what the source says is applied. Pushing an empty endpoint set to every client of every service
// on a partial answer would take the whole fleet down; keeping dead endpoints forever would hide a
// service that is really gone.
//
// The adapters decide when the rule applies (`armed`) and keep the endpoints to serve; this class
// keeps the holds, their deadlines and one timer, and says when to look again.

export interface HeldService {
  readonly service: string;
  /** How many endpoints are kept. */
  readonly endpoints: number;
  readonly since: string;
  readonly until: string;
}

export interface VanishHoldOptions {
  readonly holdMs: number;
  /** Called when a hold runs out: the adapter publishes again, and decide() then applies. */
  readonly expired: () => void;
  readonly now?: () => number;
}

interface Hold {
  readonly endpoints: number;
  readonly since: number;
  readonly until: number;
}

export const DEFAULT_VANISH_HOLD = '5m';

export class VanishHold {
  private readonly holds = new Map<string, Hold>();
  private timer: NodeJS.Timeout | undefined;
  /** The latest deadline the timer fired for: holds up to it have run out. */
  private reached = -Infinity;
  private readonly now: () => number;

  constructor(private readonly options: VanishHoldOptions) {
    this.now = options.now ?? Date.now;
  }

  get holdMs(): number {
    return this.options.holdMs;
  }

  /**
   * For a service the source still defines, going from `before` published endpoints to `after`
   * from the source: apply `after`, or hold (keep serving what was published).
   */
  decide(service: string, before: number, after: number, armed: boolean): 'apply' | 'hold' {
    const hold = this.holds.get(service);
    if (after > 0) {
      if (hold) this.end(service);
      return 'apply';
    }
    if (hold) {
      // A deadline the timer fired for has run out, whatever the clock reads (see schedule()).
      if (this.now() < hold.until && hold.until > this.reached) return 'hold';
      this.end(service);
      return 'apply';
    }
    if (!armed || before === 0 || this.options.holdMs === 0) return 'apply';
    const since = this.now();
    this.holds.set(service, { endpoints: before, since, until: since + this.options.holdMs });
    this.schedule();
    return 'hold';
  }

  /** The service left the source (its node, or the catalog's list, says so): nothing to hold. */
  release(service: string): void {
    if (this.holds.has(service)) this.end(service);
  }

  /** Releases every hold on a service not in `present`. */
  retain(present: (service: string) => boolean): void {
    for (const service of [...this.holds.keys()]) if (!present(service)) this.end(service);
  }

  isHeld(service: string): boolean {
    return this.holds.has(service);
  }

  /** When the hold of `service` runs out (ISO time), if it is held. */
  until(service: string): string | undefined {
    const hold = this.holds.get(service);
    return hold && new Date(hold.until).toISOString();
  }

  held(limit = 100): HeldService[] {
    return [...this.holds].slice(0, limit).map(([service, h]) => ({
      service,
      endpoints: h.endpoints,
      since: new Date(h.since).toISOString(),
      until: new Date(h.until).toISOString(),
    }));
  }

  get size(): number {
    return this.holds.size;
  }

  /** The registry's stale reason while anything is held. */
  problem(): Error | undefined {
    const first = this.holds.entries().next();
    if (first.done) return undefined;
    const [service, hold] = first.value;
    const more = this.holds.size > 1 ? ` (and ${this.holds.size - 1} more)` : '';
    return new Error(
      `${service} lost every endpoint at once${more}; keeping its last ${hold.endpoints} until ${new Date(hold.until).toISOString()} unless they return`,
    );
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.holds.clear();
  }

  private end(service: string): void {
    this.holds.delete(service);
    if (this.holds.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /**
   * One timer, for the earliest deadline after `from` (now, or the deadline the timer just fired
   * for: a timer may fire while the clock still reads a millisecond before it, and that deadline
   * must not get a second timer and a second callback).
   */
  private schedule(from = this.now()): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    let earliest = Infinity;
    for (const h of this.holds.values()) if (h.until > from) earliest = Math.min(earliest, h.until);
    if (earliest === Infinity) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        // The adapter decides again in expired(): a hold that ran out by the timer must apply even
        // if the clock still reads a moment before its deadline, or it would be held until the
        // source answered again (a Consul watch whose answer does not change: never).
        this.reached = Math.max(this.reached, earliest);
        this.options.expired();
        // Holds the adapter has not looked at again (ZooKeeper while disconnected) end at its next
        // publish; the next deadline still ahead gets the timer.
        this.schedule(Math.max(this.now(), earliest));
      },
      Math.max(0, earliest - this.now()),
    );
  }
}
