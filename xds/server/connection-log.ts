// Connection records for the history, written in batches: a connect storm of thousands of streams
// would otherwise cost one synchronous, fsynced database write per stream on the event loop. Events
// queue here and go to the log once per interval, inside one transaction when the log offers one.

export interface ConnectionLog {
  /** Returns an id to pass to `disconnected`. */
  connected(nodeId: string, peer: string, kind: string): number | undefined;
  disconnected(id: number, lastAcks: Record<string, unknown>, lastNacks: Record<string, unknown>): void;
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
    }
  | {
      readonly kind: 'disconnect';
      readonly token: object;
      readonly acks: Record<string, unknown>;
      readonly nacks: Record<string, unknown>;
    };

export class BatchedConnectionLog {
  private queue: Pending[] = [];
  private readonly ids = new WeakMap<object, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: ConnectionLog,
    private readonly intervalMs = 500,
  ) {}

  /** Queues a connect; the returned token identifies the connection for `disconnected`. */
  connected(nodeId: string, peer: string, proxyKind: string): object {
    const token = {};
    this.push({ kind: 'connect', token, nodeId, peer, proxyKind });
    return token;
  }

  disconnected(token: object, acks: Record<string, unknown>, nacks: Record<string, unknown>): void {
    this.push({ kind: 'disconnect', token, acks, nacks });
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
          const id = this.log.connected(e.nodeId, e.peer, e.proxyKind);
          if (id !== undefined) this.ids.set(e.token, id);
        } else {
          const id = this.ids.get(e.token);
          if (id !== undefined) this.log.disconnected(id, e.acks, e.nacks);
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
