// One local stream's stream to the control plane, kept open across outages: when it fails for a
// reason a retry may fix, the connection is marked down and the link waits for the next retry, then
// opens a new stream and replays the local stream's state (its subscriptions) on it. A refusal
// (the control plane said no: identity, invalid request, limits) is not retried: the local stream
// is ended with it. A new certificate moves the link to the new channel the same way.
import * as grpc from '@grpc/grpc-js';
import type { UpstreamConnection } from './connection.js';

/** Statuses that answer the request: retrying the same request gets the same answer. */
const REFUSALS: ReadonlySet<grpc.status> = new Set([
  grpc.status.INVALID_ARGUMENT,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.UNIMPLEMENTED,
  grpc.status.OUT_OF_RANGE,
  grpc.status.NOT_FOUND,
  grpc.status.ALREADY_EXISTS,
]);

export function isRefusal(code: grpc.status): boolean {
  return REFUSALS.has(code);
}

export interface LinkHandlers {
  /** The requests that bring a new upstream stream to the local stream's state. */
  replay(): Buffer[];
  /** A message from the control plane on stream `generation`. */
  message(bytes: Buffer, generation: number): void;
  /** The control plane refused the stream: end the local stream with this status. */
  refused(status: grpc.StatusObject): void;
  /** The upstream stream is gone; a new one follows when the connection is back. */
  lost(): void;
}

export class UpstreamLink {
  /** Counts the upstream streams opened; messages carry the one they came on. */
  generation = 0;
  private call: grpc.ClientDuplexStream<Buffer, Buffer> | undefined;
  private cancelWait: (() => void) | undefined;
  private readonly stopRotate: () => void;
  private closed = false;

  constructor(
    private readonly connection: UpstreamConnection,
    private readonly path: string,
    private readonly handlers: LinkHandlers,
  ) {
    this.stopRotate = connection.onRotate(() => {
      if (!this.call) return;
      this.abandon();
      this.open();
    });
  }

  /** Opens now if the connection is up, else at its next retry. */
  open(): void {
    if (this.closed || this.call) return;
    const call = this.connection.openStream(this.path);
    if (!call) {
      this.waitForRetry();
      return;
    }
    this.generation += 1;
    const generation = this.generation;
    this.call = call;
    let answered = false;
    call.on('data', (bytes: Buffer) => {
      if (this.call !== call) return;
      if (!answered) {
        answered = true;
        this.connection.reportSuccess();
      }
      this.handlers.message(bytes, generation);
    });
    call.on('status', (s: grpc.StatusObject) => {
      if (this.call !== call || this.closed) return;
      this.call = undefined;
      if (isRefusal(s.code)) {
        this.handlers.refused(s);
        return;
      }
      this.connection.reportFailure(s);
      this.handlers.lost();
      this.waitForRetry();
    });
    call.on('error', () => {}); // the status event carries it
    for (const request of this.handlers.replay()) call.write(request);
  }

  isOpen(): boolean {
    return this.call !== undefined;
  }

  /** Sends on the open stream; while there is none, the replay at the next open covers it. */
  send(bytes: Buffer): void {
    this.call?.write(bytes);
  }

  /** Stops reading from the control plane (HTTP/2 flow control holds it back) until `resume`. */
  pause(): void {
    this.call?.pause();
  }

  resume(): void {
    this.call?.resume();
  }

  close(): void {
    this.closed = true;
    this.stopRotate();
    this.cancelWait?.();
    this.abandon();
  }

  private abandon(): void {
    const call = this.call;
    this.call = undefined;
    call?.cancel();
  }

  private waitForRetry(): void {
    this.cancelWait?.();
    this.cancelWait = this.connection.whenRetry(() => {
      this.cancelWait = undefined;
      this.open();
    });
  }
}
