// Connection records for the history (the store's proxy table), as an observer of the ADS server:
// a stream is recorded when its proxy is known, and its disconnect with the last ACK and NACK of
// each type, whichever protocol variant it spoke. Written in batches: a connect storm of thousands
// of streams would otherwise cost one synchronous, fsynced database write per stream on the event
// loop. Events queue here and go to the log once per interval, inside one transaction when the log
// offers one; each carries the time it happened (the stream's start, its end), not the time written.
import { shortTypeName } from '../proto/type-urls.js';
import type { AdsStream } from './ads-stream.js';
import type { AdsObserver } from './observer.js';

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

type Pending =
  | {
      readonly kind: 'connect';
      readonly token: object;
      readonly nodeId: string;
      readonly peer: string;
      readonly proxyKind: string;
      readonly at: string;
    }
  | {
      readonly kind: 'disconnect';
      readonly token: object;
      readonly acks: Record<string, unknown>;
      readonly nacks: Record<string, unknown>;
      readonly at: string;
    };

export class BatchedConnectionLog {
  private queue: Pending[] = [];
  private readonly ids = new WeakMap<object, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: ConnectionLog,
    private readonly intervalMs = 500,
  ) {}

  /** Queues a connect that happened `at`; the returned token identifies the connection for `disconnected`. */
  connected(nodeId: string, peer: string, proxyKind: string, at: string): object {
    const token = {};
    this.push({ kind: 'connect', token, nodeId, peer, proxyKind, at });
    return token;
  }

  disconnected(
    token: object,
    acks: Record<string, unknown>,
    nacks: Record<string, unknown>,
    at = new Date().toISOString(),
  ): void {
    this.push({ kind: 'disconnect', token, acks, nacks, at });
  }

  /** Writes everything queued now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const queue = this.queue;
    this.queue = [];
    if (queue.length === 0) return;
    const write = (): void => {
      for (const e of queue) {
        if (e.kind === 'connect') {
          const id = this.log.connected(e.nodeId, e.peer, e.proxyKind, e.at);
          if (id !== undefined) this.ids.set(e.token, id);
        } else {
          const id = this.ids.get(e.token);
          if (id !== undefined) this.log.disconnected(id, e.acks, e.nacks, e.at);
        }
      }
    };
    if (this.log.batch) this.log.batch(write);
    else write();
  }

  private push(e: Pending): void {
    this.queue.push(e);
    this.timer ??= setTimeout(() => this.flush(), this.intervalMs);
  }
}

/** Records each identified stream's connect and disconnect in `log`. */
export class ConnectionLogObserver implements AdsObserver {
  private readonly batched: BatchedConnectionLog;
  private readonly tokens = new WeakMap<AdsStream, object>();

  constructor(log: ConnectionLog, intervalMs?: number) {
    this.batched = new BatchedConnectionLog(log, intervalMs);
  }

  streamIdentified(stream: AdsStream): void {
    const proxy = stream.proxy;
    // The stream's own start: identification comes with its first request, and the write later still.
    if (proxy)
      this.tokens.set(stream, this.batched.connected(proxy.id, stream.peer, proxy.kind, stream.connectedAt));
  }

  streamClosed(stream: AdsStream): void {
    const token = this.tokens.get(stream);
    if (token === undefined) return;
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
