// One stream's push queue: which types need (re)evaluating, merged, and at most one response in
// flight. Work on a type is a flag plus, for partial pushes, the names that changed: a stream that
// cannot keep up accumulates at most one entry per type and name, never a backlog of responses, and
// gets the latest state when it drains. Types go out in make-before-break order (xds/proto/type-urls.ts),
// and a type its target holds back (make-before-break.ts) stays pending, untouched, until released.
import type { OutgoingMessage } from './ads-stream.js';
import type { PushLimiter, SlotHolder } from './flow-control.js';
import { PUSH_ORDER } from '../proto/type-urls.js';

export interface PendingWork {
  /** Send even if the version is unchanged (a new or changed subscription, or warming after CDS). */
  force: boolean;
  /** Evaluate the whole subscription; otherwise only `names` changed (EDS and RDS may send just those). */
  full: boolean;
  readonly names: ReadonlySet<string>;
}

/** The names of full work, shared: most work is full (every answer to a request), and needs no set. */
const NO_NAMES: ReadonlySet<string> = new Set();

interface Work extends PendingWork {
  names: ReadonlySet<string>;
}

/** A push the server tracks until every stream it touched has sent it (convergence). */
export interface PushRound {
  done(): void;
}

export interface PumpTarget<M = OutgoingMessage> {
  /** Builds the response for `typeUrl`, or undefined when there is nothing to send. */
  build(typeUrl: string, work: PendingWork): M | undefined;
  write(message: M, drained: () => void): void;
  /** Nothing is pending or in flight any more. */
  idle(): void;
  /** Whether `typeUrl`'s pending work must wait (it stays pending; kick() once that changes). */
  held?(typeUrl: string): boolean;
}

/** About 13 s of pushes at the quiet-period cadence under churn. */
export const MAX_HELD_ROUNDS = 64;

export class StreamPump<M = OutgoingMessage> implements SlotHolder {
  /**
   * Work per type, made when work is marked and dropped once the last is taken: a stream that
   * keeps up holds no map between responses (every stream's fields outlive a storm's scavenges).
   */
  private pending: Map<string, Work> | undefined;
  private rounds: PushRound[] = [];
  private writing = false;
  private queued = false;
  admitted = false;
  closed = false;

  constructor(
    private readonly limiter: PushLimiter,
    private readonly target: PumpTarget<M>,
  ) {}

  /** Whether work is pending for `typeUrl`, held back or not (the make-before-break rule asks). */
  has(typeUrl: string): boolean {
    return this.pending?.has(typeUrl) ?? false;
  }

  get busy(): boolean {
    return this.writing || this.queued || this.pending !== undefined;
  }

  mark(typeUrl: string, work: { force?: boolean; full?: boolean; names?: Iterable<string> }): void {
    const pending = (this.pending ??= new Map<string, Work>());
    let p = pending.get(typeUrl);
    if (!p) pending.set(typeUrl, (p = { force: false, full: false, names: NO_NAMES }));
    p.force ||= work.force ?? false;
    p.full ||= work.full ?? false;
    if (p.full) p.names = NO_NAMES;
    else if (work.names) {
      // A set of its own, made on the first name and never shared.
      const names = p.names === NO_NAMES ? new Set<string>() : (p.names as Set<string>);
      for (const n of work.names) names.add(n);
      p.names = names;
    }
  }

  /**
   * Ties this stream's next quiet moment to `round`. A stream that never drains would hold every
   * round pushed at it; past MAX_HELD_ROUNDS the oldest is released as if sent, so its memory stays
   * bounded and a stuck client stops only its own share of the convergence metric.
   */
  join(round: PushRound): void {
    if (this.rounds.length >= MAX_HELD_ROUNDS) this.rounds.shift()?.done();
    this.rounds.push(round);
  }

  kick(): void {
    if (this.closed || this.writing || this.queued) return;
    if (!this.pending) return this.settle();
    // Only held work: no slot taken, nothing settled (the rounds wait for the held types to go).
    if (this.nextType() === undefined) return;
    this.queued = true;
    this.limiter.acquire(this);
  }

  grant(): void {
    this.queued = false;
    if (this.closed) return this.limiter.release(this);
    for (let typeUrl = this.nextType(); typeUrl !== undefined; typeUrl = this.nextType()) {
      const work = this.take(typeUrl);
      if (!work) continue;
      const message = this.target.build(typeUrl, work);
      if (!message) continue;
      this.writing = true;
      this.target.write(message, this.onDrained);
      return;
    }
    this.limiter.release(this);
    if (!this.pending) this.settle();
  }

  /** Removes and returns `typeUrl`'s work; the map goes with its last entry. */
  private take(typeUrl: string): Work | undefined {
    const pending = this.pending;
    const work = pending?.get(typeUrl);
    if (!pending || !work) return undefined;
    pending.delete(typeUrl);
    if (pending.size === 0) this.pending = undefined;
    return work;
  }

  close(): void {
    this.closed = true;
    this.pending = undefined;
    this.limiter.release(this);
    this.settle();
  }

  /** The write callback, made once per stream rather than per response. */
  private readonly onDrained = (): void => this.drained();

  private drained(): void {
    this.writing = false;
    this.admitted = true;
    this.limiter.release(this);
    this.kick();
  }

  // Called when nothing is pending: the target may add work (make-before-break clean-up) first.
  private settle(): void {
    if (!this.closed) this.target.idle();
    if (this.pending && !this.closed) return this.kick();
    const rounds = this.rounds;
    this.rounds = [];
    for (const r of rounds) r.done();
  }

  /** The first pending type in push order that is not held back, if any. */
  private nextType(): string | undefined {
    const pending = this.pending;
    if (!pending) return undefined;
    for (const t of PUSH_ORDER) if (pending.has(t) && !this.target.held?.(t)) return t;
    for (const t of pending.keys()) if (!PUSH_ORDER.includes(t) && !this.target.held?.(t)) return t;
    return undefined;
  }
}
