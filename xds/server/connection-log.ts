// Connection records for the history (the store's proxy table), as an observer of the ADS server:
// a stream is recorded when its proxy is known, and its disconnect with the last ACK and NACK of
// each type, whichever protocol variant it spoke. Written in batches: a connect storm of thousands
// of streams would otherwise cost one synchronous, fsynced database write per stream on the event
// loop. Events queue here and go to the log inside one transaction when the log offers one, once an
// interval passes without a new event (a storm's rows are written after it, not between its
// streams' requests), and at the latest MAX_DELAY_INTERVALS intervals after the first queued event
// or once MAX_QUEUED events wait. Each carries the time it happened (the stream's start, its end),
// not the time written.
import { systemClock, type Clock } from '../../model/clock.js';
import { shortTypeName } from '../proto/type-urls.js';
import type { AdsObserver, StreamView } from './observer.js';
import { isoNow } from '../protocol/wall-clock.js';

export interface ConnectionLog {
  /** Returns an id to pass to `disconnected`. `at`: when the stream started (ISO time). */
  connected(nodeId: string, peer: string, kind: string, at: string): number | undefined;
  /** `at`: when the stream ended (ISO time). */
  disconnected(
    id: number,
    lastAcks: Record<string, unknown>,
    lastNacks: Record<string, unknown>,
    at: string,
  ): void;
  /** Runs `fn` as one transaction (one commit for many records). */
  batch?(fn: () => void): void;
}

/**
 * One connection's record while its rows are pending: the connect, then the disconnect, on the same
 * object (a connect storm queues thousands: one object each, no side tables).
 */
interface Connection {
  readonly nodeId: string;
  readonly peer: string;
  readonly proxyKind: string;
  readonly at: string;
  /** The row id once the connect is written (undefined: not yet, or the log declined it). */
  id: number | undefined;
  acks: Record<string, unknown> | undefined;
  nacks: Record<string, unknown> | undefined;
  endedAt: string | undefined;
}

/** Identifies a queued connection for `disconnected` (what `connected` returned). */
export type ConnectionToken = object;

/** Queued events are written at the latest this many intervals after the first of them. */
export const MAX_DELAY_INTERVALS = 10;
/** Queued events are written at once when this many wait (memory stays bounded in endless churn). */
export const MAX_QUEUED = 20_000;

export class BatchedConnectionLog {
  // Within a flush every queued connect is written before any queued disconnect: a connection's
  // disconnect is queued after its connect, so it finds its row id.
  private connects: Connection[] = [];
  private disconnects: Connection[] = [];
  /** Cancels the pending timer, while one is set. */
  private timer: (() => void) | undefined;
  /** Events since the timer last looked: a count, so queuing one costs no timer call. */
  private recent = 0;
  /** Intervals the timer has waited since the first queued event. */
  private waited = 0;

  constructor(
    private readonly log: ConnectionLog,
    private readonly intervalMs = 500,
    /** The interval's timer (default: the system's; tests pass a manual clock). */
    private readonly clock: Clock = systemClock,
  ) {}

  /** Queues a connect that happened `at`; the returned token identifies the connection for `disconnected`. */
  connected(nodeId: string, peer: string, proxyKind: string, at: string): ConnectionToken {
    const c: Connection = {
      nodeId,
      peer,
      proxyKind,
      at,
      id: undefined,
      acks: undefined,
      nacks: undefined,
      endedAt: undefined,
    };
    this.connects.push(c);
    this.schedule();
    return c;
  }

  disconnected(
    token: ConnectionToken,
    acks: Record<string, unknown>,
    nacks: Record<string, unknown>,
    at = isoNow(),
  ): void {
    const c = token as Connection;
    c.acks = acks;
    c.nacks = nacks;
    c.endedAt = at;
    this.disconnects.push(c);
    this.schedule();
  }

  /** Writes everything queued now. */
  flush(): void {
    this.timer?.();
    this.timer = undefined;
    this.recent = 0;
    this.waited = 0;
    const connects = this.connects;
    const disconnects = this.disconnects;
    this.connects = [];
    this.disconnects = [];
    if (connects.length === 0 && disconnects.length === 0) return;
    const write = (): void => {
      for (const c of connects) c.id = this.log.connected(c.nodeId, c.peer, c.proxyKind, c.at);
      for (const c of disconnects)
        if (c.id !== undefined) this.log.disconnected(c.id, c.acks ?? {}, c.nacks ?? {}, c.endedAt ?? '');
    };
    if (this.log.batch) this.log.batch(write);
    else write();
  }

  private schedule(): void {
    this.recent += 1;
    if (this.connects.length + this.disconnects.length >= MAX_QUEUED) this.flush();
    else this.timer ??= this.clock.after(this.intervalMs, () => this.tick());
  }

  /** The timer: writes once an interval went by without events, or the first has waited long enough. */
  private tick(): void {
    this.timer = undefined;
    this.waited += 1;
    if (this.recent > 0 && this.waited < MAX_DELAY_INTERVALS) {
      this.recent = 0;
      this.timer = this.clock.after(this.intervalMs, () => this.tick());
      return;
    }
    this.flush();
  }
}

/** Records each identified stream's connect and disconnect in `log`. */
export class ConnectionLogObserver implements AdsObserver {
  private readonly batched: BatchedConnectionLog;
  /** Identified streams still open (removed as they close, like the stream registry's). */
  private readonly tokens = new Map<StreamView, ConnectionToken>();

  constructor(log: ConnectionLog, intervalMs?: number, clock?: Clock) {
    this.batched = new BatchedConnectionLog(log, intervalMs, clock);
  }

  streamIdentified(stream: StreamView): void {
    const proxy = stream.proxy;
    // The stream's own start: identification comes with its first request, and the write later still.
    if (proxy)
      this.tokens.set(stream, this.batched.connected(proxy.id, stream.peer, proxy.kind, stream.connectedAt));
  }

  streamClosed(stream: StreamView): void {
    const token = this.tokens.get(stream);
    if (token === undefined) return;
    this.tokens.delete(stream);
    const acks: Record<string, unknown> = {};
    const nacks: Record<string, unknown> = {};
    for (const t of stream.typeStatus()) {
      if (t.acked) acks[shortTypeName(t.typeUrl)] = t.acked;
      if (t.nack) nacks[shortTypeName(t.typeUrl)] = t.nack;
    }
    this.batched.disconnected(token, acks, nacks);
  }

  serverStopped(): void {
    this.batched.flush();
  }
}
